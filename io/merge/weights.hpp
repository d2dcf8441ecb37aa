#pragma once
// Weighted means' weights: one rank-0 number per input.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/reduce.hpp"
#include "core/resolve.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merge {

// A weight: the dataset at `first`, or (when `second` is not empty) that
// attribute of the object at `first`.
using WeightSource = std::pair<std::string, std::string>;

struct WeightRecord {
  std::string used_by;           // a leaf weighted by it, for messages
  hid_t type = H5I_INVALID_HID;  // the first input's datatype; interned
  std::vector<Weight> values;    // by input, read at the start of its walk
};

struct WeightState {
  std::map<WeightSource, WeightRecord> records;
};

// Reads every weight of a weighted mean from the input `ctx.input` (open as
// `file`) before its walk, refusing one that is missing, not a rank-0
// integer or float, of another dtype than the first input's, negative or
// not finite; at the last input, a total that is not positive.
void read_input_weights(const Context& ctx, Carried& carried, WeightState& state, hid_t file);
// The weight of input `input` for a leaf of the weighted-mean `rule`.
const Weight& input_weight(const WeightState& state, const LeafRule& rule, std::size_t input);

}  // namespace mb::io::merge
