#pragma once
// Merge's attributes: the same in every input unless a reducer is given.
#include "io/merge/steps.hpp"

namespace mb::io::merge {

struct MergeState;  // state.hpp

// Checks every attribute of `node` against the model's, and writes it
// (input 0) or its reduction (the last input) to `dst` (which inputs in
// between may leave invalid). Input 0 keeps the model's values.
void merge_attributes(const Context& ctx, MergeState& state, const NodeInfo& node, hid_t object, hid_t dst);

}  // namespace mb::io::merge
