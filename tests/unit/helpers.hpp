#pragma once
// Small builders for tree descriptions, so resolution and planning can be
// tested without any HDF5 file.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/layout.hpp"
#include "core/tree.hpp"

namespace mb::test {

// What `fn` throws, as mb::Error's message ("(no error)" if nothing).
inline std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Each file's length along the cut axis, as its row map gives it.
inline std::vector<std::uint64_t> lengths_of(const std::vector<RowMap>& maps) {
  std::vector<std::uint64_t> out;
  for (const auto& m : maps) out.push_back(rows_in(m));
  return out;
}

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
  for (auto& a : attributes) n.attributes.push_back({a, {}, false, "int64", false, {}, {}, false, false});
  return n;
}

// Sorts members and fills in paths, as io/tree/reader does.
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
