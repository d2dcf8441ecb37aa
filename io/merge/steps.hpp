#pragma once
// What every step of a merge shares: the job and where the walk is
// (Context), the budget and what was kept of the model (Carried), and one
// dataset as the model and the input hold it (DatasetPair). Each step has
// its own header, with the state it keeps from input to input: the survey
// of the inputs' lengths (survey.hpp), the walk over one input (walk.hpp),
// checks (checks.hpp), attributes (attributes.hpp), concatenation
// (concat.hpp), inputs that are copies of the model (copies.hpp), reducers
// (reduce.hpp, weights.hpp, stack.hpp), virtual datasets (virtual.hpp) and
// team merges (team.hpp); state.hpp gathers their state.
//
// Inputs are merged one at a time: each is opened once, walked against the
// first input's tree (the model, which stays open), its rows written where
// the merge plan puts them, and closed before the next is opened. What must
// outlive one input (reducers' accumulators, small results assembled in
// memory, offsets' running token counts) is carried, within a budget.
#include <map>
#include <string>
#include <vector>

#include "core/merge_plan.hpp"
#include "core/packed.hpp"
#include "core/resolve.hpp"
#include "core/tree.hpp"
#include "io/h5/attributes.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/intern.hpp"
#include "io/h5/space.hpp"
#include "io/merge/merge.hpp"

namespace mb::io::merge {

// An attribute value of the model, kept without HDF5 ids of its own:
// libhdf5 slows down with every live id (its registry is searched on each
// new one), and a tree of 20,000 datasets has tens of thousands of values.
struct KeptValue {
  hid_t type;  // interned (Carried::intern), not owned
  h5::SpaceInfo shape;
  h5::Buffer data;  // elements of `type`
};

// What merge keeps of one object of the first input (the model), read at
// input 0, to check every later input against without opening the model's
// object again.
struct ModelInfo {
  hid_t type = H5I_INVALID_HID;  // datasets only; interned
  h5::SpaceInfo space;           // datasets only
  // In the tree's order; kept only while the budget allows (else read from
  // the model's object when needed).
  std::vector<KeptValue> attributes;
  bool attributes_kept = false;
};

// What every step carries from one input to the next: the bytes it may
// still hold in memory (the model's attributes, accumulators and assembled
// results share them), interned datatypes, and what was kept of the model.
struct Carried {
  std::uint64_t budget = 0;                  // bytes still free
  h5::Interned types{h5::equal_types, 256};  // interned datatypes (the first 256 searched); outlive their users
  std::map<std::string, ModelInfo> models;   // by object path

  // One id for every datatype equal to `type` (the first 256 distinct
  // ones; the rest get their own copy).
  hid_t intern(hid_t type, const h5::Location& where);
  // A kept value of an attribute value read whole.
  KeptValue keep(h5::AttributeValue value, const h5::Location& where);
  // Takes `bytes` of the budget, when that many are free.
  bool take(std::uint64_t bytes);
  void give_back(std::uint64_t bytes) { budget += bytes; }
};

// One input's offsets datasets (by path), read and checked before its walk.
using InputOffsets = std::map<std::string, Offsets>;

struct WeightState;     // weights.hpp
class VerifiedInputs;  // verified.hpp

// What every step needs to know, and may not change: the job, the rules and
// the plan, and which input is being merged.
struct Context {
  const MergeJob& job;
  const Resolution& resolution;
  const MergePlan& plan;
  // Weighted means' weights of the inputs so far, each read before its
  // walk (read_input_weights).
  const WeightState& weights;
  hid_t model_file;  // the first input, open throughout
  std::size_t input = 0;
  const InputOffsets* offsets = nullptr;
  VerifiedInputs* verified = nullptr;  // none: the inputs need no verifying

  bool first() const { return input == 0; }
  bool last() const { return input + 1 == job.inputs.size(); }
  const Source& source() const { return job.inputs[input].source; }
  // The input's source to open: verified first (verified.hpp).
  const Source& verified_source() const;
  const std::string& file() const { return source().shown(); }  // in messages
  h5::Location where(const std::string& path) const { return {file(), path}; }
  h5::Location model_where(const std::string& path) const { return {job.inputs[0].source.shown(), path}; }
  h5::Location out_where(const std::string& path) const { return {job.output, path}; }
  // "PATH differs between microbatch 0 (...) and microbatch i (...): DETAIL".
  [[noreturn]] void differ(const std::string& what, const std::string& detail) const;
};

// One dataset as the model and the input being merged hold it.
struct DatasetPair {
  const NodeInfo& node;
  const ModelInfo& model;
  hid_t object;  // not owned
  h5::Id type;
  h5::SpaceInfo space;
};

// The model's object at `path`, opened again (for what was not kept of it).
h5::Id open_model(const Context& ctx, const std::string& path);

}  // namespace mb::io::merge
