#pragma once
// The checks a spec passes as a whole, once the walk of the tree has given
// every leaf its rule: what one leaf says of another (the offsets it is
// cut by, the weight of its mean), and one rule for every name of an
// object.
#include <map>
#include <string>
#include <vector>

#include "core/resolve.hpp"

namespace mb {

// "NAME:LINE:COLUMN" of a spec node, or NAME for a node without a position
// (a default spec).
std::string spec_where(const std::string& spec_name, const SourcePos& pos);

// What the walk recorded for those checks.
struct Walked {
  struct Reference {
    std::string dataset;
    std::string offsets;
    SourcePos pos;
    Quantity quantity = Quantity::MaxSeqlen;  // of a derived leaf
    std::string object;                       // the HDF5 object the leaf is (or is an attribute of)
  };

  struct WeightUse {
    std::string leaf;  // the weighted dataset's path, or "path@name"
    std::string path;
    std::string attribute;
    SourcePos pos;
    std::string object;  // the HDF5 object the leaf is (or is an attribute of)
  };

  std::vector<Reference> references;  // packed, per-sequence and derived leaves, by their offsets
  std::vector<WeightUse> weights;
  std::map<std::string, SourcePos> positions;  // of the spec node that gave each dataset its rule
};

// Throws mb::Error naming the spec node of the first check that fails.
void check_walked(const NodeInfo& root, const Resolution& resolution, const Walked& walked,
                  const std::string& spec_name);

}  // namespace mb
