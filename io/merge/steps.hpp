#pragma once
// The steps of a merge, one file each: the walk over the tree (walk.cpp),
// structure and equality checks (checks.cpp), attributes (attributes.cpp),
// concatenation (concat.cpp), reducers (reduce.cpp) and virtual datasets
// (virtual.cpp). All inputs are open; the first input's tree is the model.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/packed.hpp"
#include "core/reduce.hpp"
#include "core/resolve.hpp"
#include "core/tree.hpp"
#include "core/values.hpp"
#include "io/h5/attributes.hpp"
#include "io/h5/space.hpp"
#include "io/merge/merge.hpp"

namespace mb::io::merging {

struct InputOffsets;

// What every step needs: the job, the rules, and how to name things.
struct Context {
  const MergeJob& job;
  const Resolution& resolution;
  const InputOffsets* offsets = nullptr;  // read and checked before the walk

  h5::Location where(std::size_t input, const std::string& path) const { return {job.inputs[input].path, path}; }
  h5::Location out_where(const std::string& path) const { return {job.output, path}; }
  // "PATH differs between microbatch 0 (...) and microbatch i (...): DETAIL".
  [[noreturn]] void differ(const std::string& what, std::size_t input, const std::string& detail) const;
};

// One dataset as every input holds it (objects[i] is input i's).
struct DatasetInputs {
  const NodeInfo& node;
  const std::vector<h5::Id>& objects;
  std::vector<h5::Id> types;
  std::vector<h5::SpaceInfo> spaces;
};

// walk.cpp: writes the merged tree below the open output root.
void write_tree(const Context& ctx, const NodeInfo& root, const std::vector<h5::Id>& files, hid_t output);

// checks.cpp: the same members, kinds and attribute names in every input.
void check_members(const Context& ctx, const NodeInfo& group, const std::vector<h5::Id>& groups);
void check_kind(const Context& ctx, const NodeInfo& node, const std::vector<h5::Id>& objects);
void check_attribute_names(const Context& ctx, const NodeInfo& node, const std::vector<h5::Id>& objects);
// The same hard links in every input: called for every node in the walk's
// order (the tree reader's), it refuses an input where a further name of
// the first input is a separate object, or names another object, and one
// where two names of separate objects of the first input are one object.
class LinkCheck {
 public:
  explicit LinkCheck(std::size_t inputs) : first_names_(inputs) {}
  void check(const Context& ctx, const NodeInfo& node, const std::vector<h5::Id>& objects);

 private:
  // Per input: the first name met of every object with several links.
  std::vector<std::map<haddr_t, std::string>> first_names_;
};
// Reads each input's datatype and dataspace, refusing other dtypes or ranks.
DatasetInputs describe_inputs(const Context& ctx, const NodeInfo& node, const std::vector<h5::Id>& objects);
// Every input's shape equals the first's, except along `except_axis`.
void require_same_shape(const Context& ctx, const DatasetInputs& in, std::optional<std::size_t> except_axis);
// Each input holds the rows its split's manifest says it does.
void check_manifest_rows(const Context& ctx, const DatasetInputs& in);
// Replicated datasets hold equal values in every input.
void compare_replicated(const Context& ctx, const DatasetInputs& in);
// "PATH differs ...: dtype A vs B" unless the datatypes are equal.
void check_dtype(const Context& ctx, const std::string& what, hid_t a, hid_t b, std::size_t input);
[[noreturn]] void shapes_differ(const Context& ctx, const std::string& what, const Shape& a, const Shape& b,
                                std::size_t input);
// Two values that differ: `count` elements from flat index `first_flat` of
// a tensor, first differing at `at` (relative to first_flat).
struct Difference {
  const void* a;
  const void* b;
  std::uint64_t count;
  std::uint64_t first_flat;
  std::uint64_t at;
};
// Both values when short, else the first differing element and its index.
std::string difference_text(const ValueType& type, const Shape& shape, const Difference& difference);

// attributes.cpp: checks, reduces or copies every attribute of `node`.
void merge_attributes(const Context& ctx, const NodeInfo& node, const std::vector<h5::Id>& objects, hid_t dst);

// concat.cpp: every input's rows back where the split took them from.
std::vector<RowMap> row_maps(const Context& ctx, const DatasetInputs& in, std::size_t axis);
void concatenate(const Context& ctx, const DatasetInputs& in, std::size_t axis, const std::vector<RowMap>& maps,
                 const Shape& out_dims, hid_t dst);
void concatenate_offsets(const Context& ctx, const DatasetInputs& in, hid_t dst);
// Every input's offsets datasets, checked as split checks its input (from 0,
// rising, the same sequence count in each of an input's offsets datasets),
// and the merged offsets, checked to fit the dataset's type.
struct InputOffsets {
  std::map<std::string, std::vector<Offsets>> inputs;  // by path: per input
  std::map<std::string, Offsets> merged;               // by path
};
InputOffsets read_input_offsets(const Context& ctx, const std::vector<h5::Id>& files);
// Packed and per-sequence lengths of every input agree with its offsets.
void check_sequence_lengths(const Context& ctx, const DatasetInputs& in, const LeafRule& rule);

// reduce.cpp: element-wise reducers.
NumKind reducible_kind(const Context& ctx, const std::string& what, hid_t type);
void reduce_dataset(const Context& ctx, const DatasetInputs& in, Reducer reducer, NumKind kind, hid_t dst);
// `first` is the first input's value: its type and dataspace are the output's.
void reduce_attribute(const Context& ctx, const std::string& what, Reducer reducer, const std::string& name,
                      const std::vector<h5::Id>& objects, const h5::AttributeValue& first, hid_t dst);

// virtual.cpp: a virtual dataset over the inputs' rows (nothing copied).
h5::Id create_virtual(const Context& ctx, const DatasetInputs& in, std::size_t axis, const std::vector<RowMap>& maps,
                      const Shape& out_dims, hid_t parent);

}  // namespace mb::io::merging
