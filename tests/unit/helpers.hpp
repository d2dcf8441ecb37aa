#pragma once
// Small builders for tree descriptions, so resolution and planning can be
// tested without any HDF5 file.
#include <algorithm>
#include <string>
#include <vector>

#include "core/tree.hpp"

namespace mb::test {

inline NodeInfo dataset(const std::string& name, Shape shape) {
  NodeInfo n;
  n.kind = NodeInfo::Kind::Dataset;
  n.name = name;
  n.shape = std::move(shape);
  n.dtype = "int64";
  return n;
}

inline NodeInfo group(const std::string& name, std::vector<NodeInfo> children,
                      std::vector<std::string> attributes = {}) {
  NodeInfo n;
  n.kind = NodeInfo::Kind::Group;
  n.name = name;
  n.children = std::move(children);
  for (auto& a : attributes) n.attributes.push_back({a, {}, false, "int64", false, {}});
  return n;
}

// Sorts members and fills in paths, as io/tree_reader does.
inline void finalize(NodeInfo& n, const std::string& parent) {
  n.path = n.name.empty() ? "/" : join_path(parent, n.name);
  std::sort(n.children.begin(), n.children.end(), [](auto& a, auto& b) { return a.name < b.name; });
  for (auto& c : n.children) finalize(c, n.path);
}

inline NodeInfo root(std::vector<NodeInfo> children, std::vector<std::string> attributes = {}) {
  NodeInfo r = group("", std::move(children), std::move(attributes));
  finalize(r, "");
  return r;
}

}  // namespace mb::test
