#pragma once
// Everything a merge changes on its way from input to input, each part
// owned by the step it belongs to.
#include "io/merge/concat.hpp"
#include "io/merge/copies.hpp"
#include "io/merge/reduce.hpp"
#include "io/merge/stack.hpp"
#include "io/merge/steps.hpp"
#include "io/merge/team.hpp"
#include "io/merge/weights.hpp"

namespace mb::io::merge {

struct MergeState {
  Carried carried;  // shared by every step
  ConcatState concat;
  CopyState copies;
  ReduceState reduce;
  WeightState weights;
  StackState stacks;
  TeamState team;
};

}  // namespace mb::io::merge
