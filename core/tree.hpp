#pragma once
// A description of an HDF5 file's tree, with no HDF5 types in it: io/ fills
// it in, core/ resolves specs and plans against it, cli/ prints it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/values.hpp"

namespace mb {

using Shape = std::vector<std::uint64_t>;

// Elements in a tensor of that shape (1 for rank 0). The tree reader refuses
// shapes whose count does not fit 64 bits, so this cannot overflow on them.
inline std::uint64_t element_count(const Shape& shape) {
  std::uint64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// Maximum extent of one dimension; nullopt means unlimited.
using MaxDim = std::optional<std::uint64_t>;

struct AttributeInfo {
  std::string name;
  Shape shape;             // empty for a scalar
  bool null_space = false; // H5S_NULL: no value at all
  std::string dtype;       // numpy-style name, for display
  // Too large for an object header message (64 KiB): its object needs
  // HDF5's dense attribute storage (a version 2 object header).
  bool large = false;
  ValueType value_type;    // the datatype, described (inspect --json's dtype)
  // The value of a one-element string or integer attribute, as text
  // (integers in decimal): what presets recognise a file by. None for
  // other attributes.
  std::optional<std::string> text;
  // A dimension-scale attribute (DIMENSION_LIST, REFERENCE_LIST): object
  // references, not copied as bytes; outputs rebuild them by attaching the
  // node's `scales` (HDF5's dimension-scale API).
  bool dimension_scale = false;
  bool references = false;  // holds object references: never read as a value
};

// One filter of a dataset's pipeline, with its parameters.
struct FilterInfo {
  int id = 0;
  std::string name;
  bool optional = false;  // H5Z_FLAG_OPTIONAL
  std::vector<unsigned> cd_values;
};

struct StorageInfo {
  std::string layout;              // "contiguous", "chunked", "compact", ...
  Shape chunks;                    // chunked layout only
  std::vector<std::string> filters;
  std::vector<FilterInfo> filter_params;  // the same filters, with their parameters
  std::vector<MaxDim> max_shape;
  // Why reading it would not give its data (a virtual dataset whose sources
  // HDF5 would fill in); empty when it reads. Only describe_tree leaves such
  // a dataset in a tree.
  std::string unreadable;
};

struct NodeInfo {
  enum class Kind { Group, Dataset };

  Kind kind = Kind::Group;
  std::string name;  // last path component; "" for the root
  std::string path;  // absolute HDF5 path, "/" for the root
  std::vector<AttributeInfo> attributes;

  // Hard links. Empty for an object's first name (in pre-order, members in
  // name order); for every further name of an object already met, the
  // path of that first name. Outputs write the object once, under its first
  // name, and make every further name a hard link to it. A further name of
  // a group lists the group's members too, under their own paths (each a
  // further name itself), so that every path of the file gets its rule.
  std::string first_name;

  // Group only: members sorted by name.
  std::vector<NodeInfo> children;

  // Dataset only.
  Shape shape;             // empty for rank 0
  bool null_space = false; // H5S_NULL dataspace
  std::string dtype;
  std::uint64_t element_size = 0;  // bytes per element in the file (H5Tget_size)
  ValueType value_type;            // the datatype, described (inspect --json's dtype)
  StorageInfo storage;
  // Dimension scales (netCDF-4's dimensions). Per axis, the paths of the
  // scales attached to it (DIMENSION_LIST), empty when none or no axis has one.
  std::vector<std::vector<std::string>> scales;
  // Per axis, the name of its dimension: the last path component of its
  // first attached scale, or for a dimension scale itself (is_scale), the
  // scale's own name on axis 0; "" for an axis without one.
  std::vector<std::string> dimensions;
  bool is_scale = false;  // CLASS = "DIMENSION_SCALE"

  bool is_group() const { return kind == Kind::Group; }
  bool is_further_name() const { return !first_name.empty(); }
  bool has_large_attribute() const;
  std::size_t rank() const { return shape.size(); }
  const NodeInfo* child(const std::string& child_name) const;

  // True when the members are named exactly "0".."n-1" (a sequence group).
  bool is_sequence() const;
};

// numpy's text of a shape: "(3, 4)", "(5,)", "()".
std::string shape_text(const Shape& shape);

// Joins a group path and a member name into an HDF5 path.
std::string join_path(const std::string& parent, const std::string& name);

// Calls fn(node) for every node in pre-order (parents before children).
template <typename Fn>
void for_each_node(const NodeInfo& node, Fn&& fn) {
  fn(node);
  for (const auto& c : node.children) for_each_node(c, fn);
}

}  // namespace mb
