#pragma once
// The chunk-spec tree (PRODUCT.md §2) as specs/ parses it, and the rule that
// resolution assigns to every leaf of a file.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mb {

enum class Reducer { Sum, Mean, Min, Max };

const char* reducer_name(Reducer r);

// What happens to one leaf (dataset or attribute).
struct LeafRule {
  enum class Mode { Split, Replicate, Reduce };
  Mode mode = Mode::Replicate;
  int axis = 0;                 // Split: as written (may be negative) or normalised
  Reducer reducer = Reducer::Sum;

  static LeafRule split(int axis) { return {Mode::Split, axis, Reducer::Sum}; }
  static LeafRule replicate() { return {Mode::Replicate, 0, Reducer::Sum}; }
  static LeafRule reduce(Reducer r) { return {Mode::Reduce, 0, r}; }
  friend bool operator==(const LeafRule&, const LeafRule&) = default;
};

// Where a spec node was written, for error messages (1-based; 0 = unknown).
struct SourcePos {
  int line = 0;
  int column = 0;
};

struct SpecNode {
  enum class Kind { Default, Leaf, Object, Array };

  Kind kind = Kind::Default;
  SourcePos pos;
  LeafRule leaf;                                        // Kind::Leaf
  std::vector<std::pair<std::string, SpecNode>> members;  // Kind::Object, in file order
  std::shared_ptr<SpecNode> star;                      // Kind::Object: the "*" entry, if any
  std::vector<SpecNode> elements;                      // Kind::Array

  static SpecNode make_default() { return {}; }
  static SpecNode make_leaf(LeafRule rule) {
    SpecNode n;
    n.kind = Kind::Leaf;
    n.leaf = rule;
    return n;
  }
};

}  // namespace mb
