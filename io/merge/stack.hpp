#pragma once
// {"reduce": "stack"}: the value of input i is slice i of a new leading
// axis of length N (the number of inputs).
#include <map>
#include <string>
#include <vector>

#include "io/merge/reduce.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merge {

// Stacked attributes ("path@name"): every input's value so far (attribute
// values are written whole, at the last input).
struct StackState {
  std::map<std::string, std::vector<h5::Buffer>> attributes;
};

// The output's dataset is created with its final shape at input 0; every
// input writes its slice.
h5::Id create_stacked(const Context& ctx, const DatasetPair& in, hid_t parent);
void stack_dataset(const Context& ctx, const DatasetPair& in, hid_t dst);
// Keeps the input's value of the attribute; at the last input, writes all
// of them to `dst` as one attribute of `model`'s type.
void stack_attribute(const Context& ctx, StackState& state, const ReducedAttribute& attribute, const KeptValue& model,
                     hid_t dst);
// Whether the output's object for `node` (open as `object` in the first
// input) needs a version 2 object header: an attribute over 64 KiB, now or
// once stacked.
bool needs_newer_header(const Context& ctx, const NodeInfo& node, hid_t object);

}  // namespace mb::io::merge
