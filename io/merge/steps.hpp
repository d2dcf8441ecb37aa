#pragma once
// The steps of a merge, one file each: the survey of the inputs' lengths
// (survey.cpp), the walk over one input (walk.cpp), structure and equality
// checks (checks.cpp), attributes (attributes.cpp), concatenation
// (concat.cpp), reducers (reduce.cpp, weights.cpp, stack.cpp) and virtual
// datasets (virtual.cpp).
//
// Inputs are merged one at a time: each is opened once, walked against the
// first input's tree (the model, which stays open), its rows written where
// the merge plan puts them, and closed before the next is opened. What must
// outlive one input (reducers' accumulators, small results assembled in
// memory, offsets' running token counts) is carried, within a budget.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clones.hpp"
#include "core/merge_plan.hpp"
#include "core/packed.hpp"
#include "core/reduce.hpp"
#include "core/resolve.hpp"
#include "core/selection.hpp"
#include "core/tree.hpp"
#include "core/values.hpp"
#include "io/h5/attributes.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/dataset.hpp"
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

// A weighted mean's weight (one rank-0 number per input): the dataset at
// `first`, or (when `second` is not empty) that attribute of the object
// at `first`.
using WeightSource = std::pair<std::string, std::string>;

struct WeightRecord {
  std::string used_by;           // a leaf weighted by it, for messages
  hid_t type = H5I_INVALID_HID;  // the first input's datatype; interned
  std::vector<Weight> values;    // by input, read at the start of its walk
};

// A split dataset whose chunk bands (chunk rows along its axis) the ranks
// of a team merge share out: chunked, compressed, large.
struct SharedLeaf {
  std::size_t axis = 0;
  Shape dims, chunk;
  Segment rows;  // this rank's rows (whole bands but at the end)
};

// What the walk carries from one input to the next. The model's
// attributes, accumulators and assembled results are held only while they
// fit `budget` bytes.
struct ModelLayout;

struct Carried {
  std::uint64_t budget = 0;                      // bytes still free
  h5::Interned types{h5::equal_types, 256};      // interned datatypes (the first 256 searched); outlive their users
  std::map<std::string, ModelInfo> models;       // by object path
  std::map<std::string, h5::Buffer> assembled;   // small results (of interned types), written at the last input
  // Where assembled results allocated at creation lie in the output
  // (allocate_assembly), and the output's file descriptor: the last input
  // writes them there as file bytes rather than reopening each dataset.
  std::map<std::string, std::uint64_t> placed;
  int output_fd = -1;
  std::uint64_t placed_written = 0;  // how many were
  std::map<std::string, Accumulator> reducing;   // reduced datasets ("path") and attributes ("path@name")
  std::vector<std::string> deferred;             // reduced datasets over the budget: reduced after the walk
  std::map<std::string, std::uint64_t> tokens;   // offsets: the tokens of the inputs merged so far
  std::map<WeightSource, WeightRecord> weights;  // weighted means' weights
  // Stacked attributes ("path@name"): every input's value so far (attribute
  // values are written whole, at the last input).
  std::map<std::string, std::vector<h5::Buffer>> stacks;
  // A team merge: the split datasets shared out by chunk bands (team.cpp),
  // decided at input 0.
  std::map<std::string, SharedLeaf> shared;
  // Inputs that are copies of the model (copies.cpp): where each split
  // dataset's data lies in the model, while every one is one run of bytes
  // read whole.
  bool copies_possible = false;  // by the job and the rules (copies_possible)
  bool copies = true;
  std::map<std::string, ByteSpan> model_data;
  // The same, laid out once for every later input (copies.cpp).
  std::shared_ptr<const ModelLayout> layout;

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

// What every step needs: the job, the rules and the plan, what is carried,
// and which input is being merged.
struct Context {
  const MergeJob& job;
  const Resolution& resolution;
  const MergePlan& plan;
  Carried& carried;
  hid_t model_file;  // the first input, open throughout
  std::size_t input = 0;
  const InputOffsets* offsets = nullptr;

  bool first() const { return input == 0; }
  bool last() const { return input + 1 == job.inputs.size(); }
  const std::string& file() const { return job.inputs[input].path; }
  h5::Location where(const std::string& path) const { return {file(), path}; }
  h5::Location model_where(const std::string& path) const { return {job.inputs[0].path, path}; }
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

// survey.cpp: every input's length along every cut axis: from the manifest
// where it records them, else from one pass over the inputs' shapes (each
// input opened once, closed before the next).
InputLengths input_lengths(const Context& ctx, const NodeInfo& first_tree);
// Context parallelism: the degree and, with packed data, every input's
// offsets (each input opened once more for them).
ContextParallelInputs context_parallel_inputs(const Context& ctx);

// walk.cpp: merges the input `ctx.input` (open as `file`) into the output:
// input 0 creates the output's tree.
void merge_input(const Context& ctx, const NodeInfo& root, hid_t file, hid_t output);
// The model's object at `path`, opened again (for what was not kept of it).
h5::Id open_model(const Context& ctx, const std::string& path);

// checks.cpp: the same members, kinds and attribute names as the model.
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
// than the model's (input 0: keeps them as the model's).
DatasetPair describe_pair(const Context& ctx, const NodeInfo& node, hid_t object);
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

// attributes.cpp: checks every attribute of `node` against the model's,
// and writes it (input 0) or its reduction (the last input) to `dst`
// (which inputs in between may leave invalid).
void merge_attributes(const Context& ctx, const NodeInfo& node, hid_t object, hid_t dst);

// copies.cpp: inputs that are copies of the model (see there). Whether any
// input could be (decided once, before input 0).
bool copies_possible(const Context& ctx);
// At input 0,
// notes where a split dataset's data lies in the model (`whole`: its result
// assembled in memory, if it is).
void note_model_data(const Context& ctx, const DatasetPair& in, const h5::Buffer* whole);
// Merges input `ctx.input` as a copy of the model when it is one; false,
// having done nothing, when it is not (then the walk merges it).
bool merge_copy(const Context& ctx, hid_t output);

// concat.cpp: the input's rows where the split took them from.
void concatenate(const Context& ctx, const DatasetPair& in, const MergedLeaf& leaf, hid_t dst);
// Before input 0 creates a split dataset's output: a result small enough to
// be assembled in memory, of a type whose elements are its file bytes, gets
// its storage at creation, whatever the path taken later, so that merged
// files do not depend on it.
void allocate_assembly(const Context& ctx, const std::string& path, const MergedLeaf& leaf, h5::Prototype& prototype);
// Whether the result assembled for `path` is written at the last input as
// file bytes where it lies, with no need of its output dataset.
bool placed(const Context& ctx, const std::string& path);
// At the last input, writes the result assembled in memory (if it was) to
// `dst`, which may be invalid when the result is placed.
void write_assembled(const Context& ctx, const std::string& path, const MergedLeaf& leaf, hid_t dst);
// The input's offsets, shifted past the tokens of the inputs before it.
void concatenate_offsets(const Context& ctx, const DatasetPair& in, const MergedLeaf& leaf, hid_t dst);
// The input's offsets datasets, checked as split checks its input (from 0,
// rising, the same sequence count in each).
InputOffsets read_input_offsets(const Context& ctx, hid_t file);
// Packed and per-sequence lengths agree with the input's offsets.
void check_sequence_lengths(const Context& ctx, const DatasetPair& in, const LeafRule& rule);

// team.cpp: a team merge (MergeTeam). This rank's rows of the split
// dataset at `path` (created as `dst`), when the team shares it out; none
// when rank 0 writes it whole (decided at input 0, for every rank alike).
std::optional<Segment> team_rows(const Context& ctx, const std::string& path, const MergedLeaf& leaf, hid_t dst);
// The places, cut to the rows `rows` along `axis` of the batch side.
std::vector<SegmentPlace> clip_places(const std::vector<SegmentPlace>& places, std::size_t axis, const Segment& rows);
// Rank 0: every other rank's chunks of the shared datasets, moved as stored
// from its scratch file into `out`.
void gather_team_chunks(const Context& ctx, hid_t out);
// Rank q's scratch file: DIR/.NAME.rank-q-of-P.scratch
std::string scratch_path(const std::string& output, std::uint64_t rank, std::uint64_t size);

// reduce.cpp: element-wise reducers.
NumKind reducible_kind(const Context& ctx, const std::string& what, hid_t type);
// Folds the input's values into the carried accumulator (the result is
// written at the last input), or defers a dataset too large to carry.
void reduce_dataset(const Context& ctx, const DatasetPair& in, const LeafRule& rule, hid_t dst);
// The deferred datasets, block by block, each block read from every input
// (opened for it and closed again), into the output file.
void reduce_deferred(const Context& ctx, hid_t output);
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
void reduce_attribute(const Context& ctx, const ReducedAttribute& attribute, const KeptValue& model, hid_t dst);

// weights.cpp: reads every weight of a weighted mean from the input
// `ctx.input` (open as `file`) before its walk, refusing one that is
// missing, not a rank-0 integer or float, of another dtype than the first
// input's, negative or not finite; at the last input, a total that is not
// positive.
void read_input_weights(const Context& ctx, hid_t file);
// The weight of input `input` for a leaf of the weighted-mean `rule`.
const Weight& input_weight(const Context& ctx, const LeafRule& rule, std::size_t input);

// stack.cpp: {"reduce": "stack"}: the value of input i is slice i of a new
// leading axis of length N (the number of inputs). The output's dataset is
// created with its final shape at input 0; every input writes its slice.
h5::Id create_stacked(const Context& ctx, const DatasetPair& in, hid_t parent);
void stack_dataset(const Context& ctx, const DatasetPair& in, hid_t dst);
// Keeps the input's value of the attribute; at the last input, writes all
// of them to `dst` as one attribute of `model`'s type.
void stack_attribute(const Context& ctx, const ReducedAttribute& attribute, const KeptValue& model, hid_t dst);
// Whether the output's object for `node` (open as `object` in the first
// input) needs a version 2 object header: an attribute over 64 KiB, now or
// once stacked.
bool needs_newer_header(const Context& ctx, const NodeInfo& node, hid_t object);

// virtual.cpp: a virtual dataset over every input's rows (nothing copied;
// no input is opened).
h5::Id create_virtual(const Context& ctx, const DatasetPair& in, const MergedLeaf& leaf, hid_t parent);

}  // namespace mb::io::merge
