#pragma once
// The chunk spec as specs/ parses it: a JSON tree that mirrors the file (an
// object for a group, an array for a group of members "0".."n-1", a leaf for
// every dataset below it, null for the default). And the rule that
// resolution assigns to every leaf of a file.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mb {

// Stack is not element-wise: every input's value becomes one slice of a
// new leading axis of length N (the number of inputs).
enum class Reducer { Sum, Mean, Min, Max, Stack };

const char* reducer_name(Reducer r);

// A number a Derive leaf computes from an offsets dataset (S+1 values):
// the longest sequence, max of offsets[i+1] - offsets[i] (0 with no
// sequences), the token count, offsets[S] - offsets[0], or the sequence
// count S (a sparse matrix's rows, AnnData's shape[0]). NumRows is of a
// dataset split on axis 0 instead: its length in the file (PyTables' NROWS).
enum class Quantity { MaxSeqlen, NumTokens, NumSequences, NumRows };

// "max_seqlen", "num_tokens", "num_sequences", "num_rows": the spec's keys
const char* quantity_name(Quantity q);

// Every key a leaf object takes ("split_axis", "reduce", "weight", ...), as
// specs/ parses them: a key that names nothing may be one, misspelt.
const std::vector<std::string>& leaf_keys();

// A packed leaf's pad value (--cp-pad), as the spec writes it: an integer
// (up to int64), a number, or a bool (for h5py's bool data: true or
// false). Whether it fits the dataset's type is checked where the type is
// known (io/h5/types.hpp, pad_element).
struct PadValue {
  enum class Kind { Integer, Number, Bool };
  Kind kind = Kind::Integer;
  std::int64_t integer = 0;
  double number = 0;
  bool flag = false;
  static PadValue of_integer(std::int64_t v) { return {Kind::Integer, v, 0, false}; }
  static PadValue of_number(double v) { return {Kind::Number, 0, v, false}; }
  static PadValue of_bool(bool v) { return {Kind::Bool, 0, 0, v}; }
  friend bool operator==(const PadValue&, const PadValue&) = default;
};

// What happens to one leaf (dataset or attribute).
struct LeafRule {
  enum class Mode {
    Split,        // cut along `axis`, concatenate on merge
    Replicate,    // whole copy; equal on merge
    Reduce,       // merge only: element-wise `reducer` (Stack: a new leading axis)
    Offsets,      // packed-sequence offsets (S+1 rising integers): cut by sequence, rebased to 0
    Packed,       // token-level data packed along `axis`, described by the offsets at `offsets`
    PerSequence,  // one row per sequence along `axis`, sequences described by `offsets`
    Derive,       // a rank-0 integer recomputed per file: `quantity` of the offsets at `offsets`
    Drop,         // split only: not written (a derived index, PyTables' _i_table, that a cut would falsify)
    // Merge only: the padded offsets split --cp-pad wrote beside the offsets
    // at `offsets`; checked against the documents, not written.
    PaddedOffsets,
    // Merge only: the data-parallel ranks' sequence bounds a default-layout
    // --dp-degree split wrote beside the offsets at `offsets`
    // (rank_bounds_name); checked against the file's cells, not written.
    RankBounds,
  };
  Mode mode = Mode::Replicate;
  int axis = 0;  // as written (may be negative) or, once resolved, normalised
  Reducer reducer = Reducer::Sum;
  std::string offsets;  // Packed, PerSequence, Derive: HDF5 path of the offsets dataset
  // Reduce with Mean: weighted by one rank-0 number per input, the dataset
  // at `weight` or, when `weight_attribute` is not empty, that attribute of
  // the object at `weight`. Empty: unweighted.
  std::string weight;
  std::string weight_attribute;
  Quantity quantity = Quantity::MaxSeqlen;  // Derive
  // Split only: the axis along which --cp-degree cuts each sequence (as
  // written, or once resolved, normalised); none: the same for every CP rank.
  std::optional<int> sequence_axis;
  // Split only, as written: the name of the dimension to cut (a dimension
  // scale's name, netCDF's dimension) instead of `axis`. Resolution turns
  // it into the axis that dimension is on, or into Replicate for a dataset
  // without it; a resolved rule has none.
  std::string dim;
  // Derive only: the element of a 1-D integer leaf that is derived (a
  // shape's row count); the other elements are replicated. None: rank 0.
  std::optional<int> element;
  // Packed only: what --cp-pad pads its documents with (none: 0, or False
  // for bool data).
  std::optional<PadValue> pad;

  static LeafRule split(int axis) {
    return {Mode::Split, axis, Reducer::Sum, {}, {}, {}, Quantity::MaxSeqlen, {}, {}, {}, {}};
  }
  static LeafRule split_dim(std::string dim) {
    return {Mode::Split, 0, Reducer::Sum, {}, {}, {}, Quantity::MaxSeqlen, {}, std::move(dim), {}, {}};
  }
  static LeafRule replicate() { return {Mode::Replicate, 0, Reducer::Sum, {}, {}, {}, Quantity::MaxSeqlen, {}, {}, {}, {}}; }
  static LeafRule reduce(Reducer r) { return {Mode::Reduce, 0, r, {}, {}, {}, Quantity::MaxSeqlen, {}, {}, {}, {}}; }
  static LeafRule weighted_mean(std::string path, std::string attribute = {}) {
    return {Mode::Reduce, 0, Reducer::Mean, {}, std::move(path), std::move(attribute), Quantity::MaxSeqlen, {}, {}, {}, {}};
  }
  static LeafRule offsets_leaf() { return {Mode::Offsets, 0, Reducer::Sum, {}, {}, {}, Quantity::MaxSeqlen, {}, {}, {}, {}}; }
  static LeafRule packed(std::string offsets, int axis) {
    return {Mode::Packed, axis, Reducer::Sum, std::move(offsets), {}, {}, Quantity::MaxSeqlen, {}, {}, {}, {}};
  }
  static LeafRule per_sequence(std::string offsets, int axis) {
    return {Mode::PerSequence, axis, Reducer::Sum, std::move(offsets), {}, {}, Quantity::MaxSeqlen, {}, {}, {}, {}};
  }
  static LeafRule derived(Quantity q, std::string offsets) {
    return {Mode::Derive, 0, Reducer::Sum, std::move(offsets), {}, {}, q, {}, {}, {}, {}};
  }
  static LeafRule drop() {
    LeafRule r;
    r.mode = Mode::Drop;
    return r;
  }
  // True when each microbatch holds some of the rows along `axis`.
  bool cuts_rows() const {
    return mode != Mode::Replicate && mode != Mode::Reduce && mode != Mode::Derive && mode != Mode::Drop &&
           mode != Mode::PaddedOffsets && mode != Mode::RankBounds;
  }
  bool stacks() const { return mode == Mode::Reduce && reducer == Reducer::Stack; }
  bool weighted() const { return mode == Mode::Reduce && !weight.empty(); }
  // "/path" or "/path@name", as messages show the weight.
  std::string weight_text() const { return weight_attribute.empty() ? weight : weight + "@" + weight_attribute; }
  friend bool operator==(const LeafRule&, const LeafRule&) = default;
};

// Where a spec node was written, for error messages (1-based; 0 = unknown).
struct SourcePos {
  int line = 0;
  int column = 0;
};

struct SpecMember;

struct SpecNode {
  enum class Kind { Default, Leaf, Object, Array };

  Kind kind = Kind::Default;
  SourcePos pos;
  LeafRule leaf;                                        // Kind::Leaf
  std::vector<SpecMember> members;                     // Kind::Object, in file order; Kind::Leaf: the
                                                       // dataset's own "@name" keys (a split leaf's)
  std::shared_ptr<SpecNode> star;                      // Kind::Object: the "*" entry, if any
  std::vector<SpecNode> elements;                      // Kind::Array

  static SpecNode make_default();
  static SpecNode make_leaf(LeafRule rule);
};

// One key of an object spec: a member, or (written "@name") an attribute.
struct SpecMember {
  std::string key;  // the member's or attribute's name, as HDF5 spells it
  SpecNode spec;
  bool attribute = false;
};

inline SpecNode SpecNode::make_default() { return {}; }

inline SpecNode SpecNode::make_leaf(LeafRule rule) {
  SpecNode n;
  n.kind = Kind::Leaf;
  n.leaf = std::move(rule);
  return n;
}

}  // namespace mb
