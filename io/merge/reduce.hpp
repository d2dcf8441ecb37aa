#pragma once
// Element-wise reducers (sum, mean, min, max, weighted means) across the
// inputs, for datasets and attributes.
#include <map>
#include <string>
#include <vector>

#include "core/reduce.hpp"
#include "core/resolve.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merge {

// What the reducers carry from one input to the next.
struct ReduceState {
  std::map<std::string, Accumulator> reducing;  // reduced datasets ("path") and attributes ("path@name")
  std::vector<std::string> deferred;            // reduced datasets over the budget: reduced after the walk
};

NumKind reducible_kind(const Context& ctx, const std::string& what, hid_t type);
// Folds the input's values into the carried accumulator (the result is
// written at the last input), or defers a dataset too large to carry.
void reduce_dataset(const Context& ctx, Carried& carried, ReduceState& state, const DatasetPair& in, hid_t dst);
// The deferred datasets, block by block, each block read from every input
// (opened for it and closed again), into the output file.
void reduce_deferred(const Context& ctx, const ReduceState& state, hid_t output);
// One attribute of the input being merged, to be reduced.
struct ReducedAttribute {
  const std::string& what;  // "path@name"
  const std::string& path;  // of the object holding it
  const std::string& name;
  const LeafRule& rule;
  hid_t object;  // holding it; not owned
};
// Folds the attribute into its carried accumulator; at the last input,
// writes the result to `dst`. `model` is the model's value: its type and
// dataspace are the output's.
void reduce_attribute(const Context& ctx, ReduceState& state, const ReducedAttribute& attribute,
                      const KeptValue& model, hid_t dst);

}  // namespace mb::io::merge
