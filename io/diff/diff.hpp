#pragma once
// microbatch diff: two HDF5 files compared exactly, object by object. They
// are the same when both trees hold the same groups, datasets and named
// datatypes under the same names (and soft or external links with the same
// targets), of the same datatypes and shapes, holding the same values bit
// for bit (a NaN equals the NaN of the same bits, -0.0 is not 0.0), with the
// same attributes; and, when asked, stored alike (layout, chunks, filters).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/source.hpp"

namespace mb::io::diff {

struct Options {
  // Also the storage: layout, chunk shape, filter pipeline, max dims.
  bool storage = false;
  // Stop after this many findings (0: find them all).
  std::size_t limit = 10;
  // Bytes of values in memory at once, both sides together.
  std::size_t buffer_bytes = 64u << 20;
};

// One way the files differ, at `path`: an object ("/a/b") or an attribute
// ("/a/b@units").
struct Finding {
  std::string path;
  // missing, kind, link, dtype, shape, values, attribute, storage
  std::string what;
  // What differs, A's side first: "only in B.h5", "dtype int64 vs int32",
  // "at [3, 1]: 0.5 vs nan".
  std::string detail;
};

struct Report {
  std::vector<Finding> findings;
  // False when the comparison stopped at the limit with more to report.
  bool complete = true;
  std::uint64_t objects = 0;  // objects compared (of A)
  std::uint64_t bytes = 0;    // bytes of values compared (of A)
  bool same() const { return findings.empty(); }
};

// Walks both files in name order, A's tree and B's together.
Report compare(const Source& a, const Source& b, const Options& options);

}  // namespace mb::io::diff
