#pragma once
// Merge's checks: every input has the model's tree, and what should be
// equal is equal.
#include <map>
#include <optional>
#include <string>

#include "core/values.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merge {

// The same members, kinds and attribute names as the model.
void check_members(const Context& ctx, const NodeInfo& group, hid_t object);
void check_kind(const Context& ctx, const NodeInfo& node, hid_t object);
void check_attribute_names(const Context& ctx, const NodeInfo& node, hid_t object);
// The same hard links in one input as in the first: called for every node
// in the walk's order (the tree reader's), it refuses an input where a
// further name of the first input is a separate object, or names another
// object, and one where two names of separate objects of the first input
// are one object.
class LinkCheck {
 public:
  void check(const Context& ctx, const NodeInfo& node, hid_t object);

 private:
  std::map<haddr_t, std::string> first_names_;  // the first name met of every object with several links
};
// Reads the input's datatype and dataspace, refusing another dtype or rank
// than the model's (input 0: keeps them as the model's in `carried`).
DatasetPair describe_pair(const Context& ctx, Carried& carried, const NodeInfo& node, hid_t object);
// The input's shape equals the model's, except along `except_axis`.
void require_same_shape(const Context& ctx, const DatasetPair& in, std::optional<std::size_t> except_axis);
// The input holds the rows the merge plan (from its split's manifest, or
// the survey) gives it.
void check_rows(const Context& ctx, const DatasetPair& in, const MergedLeaf* leaf);
// Replicated datasets hold the model's values.
void compare_replicated(const Context& ctx, const DatasetPair& in);
// Context parallelism: a dataset the same for every CP rank holds the
// values of the input of CP rank 0 with the same rank and microbatch (its
// twin, opened for it).
void compare_with_twin(const Context& ctx, const DatasetPair& in);
// "PATH differs ...: dtype A vs B" unless the datatypes are equal.
void check_dtype(const Context& ctx, const std::string& what, hid_t model, hid_t type);
[[noreturn]] void shapes_differ(const Context& ctx, const std::string& what, const Shape& a, const Shape& b);

// What to say after a replicated value (`what`: "/path" or "/path@name")
// differs: values meant to differ want a reducer, under the spec key `key`
// ("name" or "@name"); and when it weights a mean, whose.
std::string reducer_hint(const Context& ctx, const std::string& what, const std::string& key);

}  // namespace mb::io::merge
