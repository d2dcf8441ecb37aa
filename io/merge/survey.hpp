#pragma once
// Before any data is written: every input's length along every cut axis,
// and context parallelism's offsets.
#include "core/merge_plan.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merge {

// From the manifest where it records them, else from one pass over the
// inputs' shapes (each input opened once, closed before the next).
InputLengths input_lengths(const Context& ctx, const NodeInfo& first_tree);
// Context parallelism's degree; packed sequences cut across data-parallel
// ranks in the per-microbatch layout: where each file's sequences go, from
// the split's manifest (refused without one); with either, every input's
// offsets (each input opened once more for them).
PackedInputs packed_inputs(const Context& ctx);

}  // namespace mb::io::merge
