#pragma once
// Every input of a merge is the file its split published: the size and
// (unless --no-verify) the content digest its manifest records. Nothing of
// an input is read before it is verified; verifying is what lets merge
// trust the manifest's lengths without opening the inputs.
//
// One process hashes the inputs on a thread of its own, in input order, so
// that input k+1 is hashed while input k is merged: ready(k) waits for input
// k's digest. A team checks its share of the inputs at once instead (rank R
// checks inputs R, R + P, ...: a digest reads a whole file, which for a
// remote input is a download, and each rank fetches its own share), and so
// do remote inputs, which are downloaded in parallel.
#include <cstddef>
#include <optional>
#include <vector>

#include "io/merge/merge.hpp"
#include "io/publish/digest.hpp"

namespace mb::io::merge {

class VerifiedInputs {
 public:
  // Checks every size (and, where not hashed as the merge goes, digest) now.
  explicit VerifiedInputs(const MergeJob& job);
  // Throws unless input `k` is the file its split published.
  void ready(std::size_t k);

 private:
  const MergeJob& job_;
  std::optional<publish::Hasher> hasher_;  // when hashing as the merge goes
  std::vector<bool> done_;                 // by input: checked
};

}  // namespace mb::io::merge
