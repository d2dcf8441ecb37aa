#pragma once
// The walk over one input: the model's tree, object by object.
#include "io/merge/state.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merge {

// Merges the input `ctx.input` (open as `file`) into the output: input 0
// creates the output's tree.
void merge_input(const Context& ctx, MergeState& state, const NodeInfo& root, hid_t file, hid_t output);

}  // namespace mb::io::merge
