#pragma once
// Writing a split's output files: a range of them, under their temporary
// names, by this process (each file hashed on a second thread while the
// next is written) or by -j forked workers (hashed once all are written);
// model files through libhdf5, the files of their class as copies of them.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/shards.hpp"
#include "io/run/progress.hpp"
#include "io/split/split.hpp"
#include "io/tree/prepare.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {

// The output files, by final and temporary name.
struct OutputFiles {
  std::vector<std::string> names;   // as the manifest lists them
  std::vector<std::string> finals;  // paths
  std::vector<std::string> temps;
};

// Told of each file (by plan index) as soon as its record is known.
using Hashed = std::function<void(std::uint64_t index, const specs::FileRecord& record)>;

// Writes files `range` of `files` and returns their records, telling
// `hashed` (if any) of each as soon as it is known. On `job.workers`
// processes, worker w of W writes share_of(range, W, w) (this process is
// worker 0), and the files are hashed once all are written; one process
// hashes each file while it writes the next.
std::vector<specs::FileRecord> write_range(const SplitJob& job, const tree::Prepared& prepared,
                                           const OutputFiles& files, FileRange range, run::ByteMeter& meter,
                                           const Hashed& hashed = {});

}  // namespace mb::io::split
