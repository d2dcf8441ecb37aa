#pragma once
// The split job: one HDF5 file per output of the plan, plus manifest.json.
// No HDF5 types here (cli/ calls it).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/shards.hpp"
#include "core/source.hpp"
#include "io/tree/prepare.hpp"
#include "io/run/progress.hpp"
#include "io/store/store.hpp"
#include "io/transfer/policy.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {

struct SplitJob {
  Source input;                     // the batch file
  store::WritableStore* place = nullptr;  // where the outputs go (-o)
  bool force = false;      // replace an earlier split there
  // --resume: keep what an interrupted run of the same command published
  // (io/split/resume.hpp), publish each file as it is complete.
  bool resume = false;
  SplitOptions options;    // as planned; recorded in the manifest
  transfer::Policy policy;
  std::uint64_t workers = 1;     // -j: processes writing output files in parallel
  // --shard K/P: write only shard K's share of the files and its part record
  // (io/split/parts.hpp), not the manifest. -j then shares out that share.
  std::optional<Shard> shard;
  // Called once this run's files are written and digested, just before any
  // is published; throwing abandons them (a team: every rank agrees first).
  std::function<void()> before_publish;
  // A team's rank 0 claimed the place for this run (io/split/team.hpp).
  bool claimed = false;
  unsigned stall_seconds = 600;  // the workers' own stall watchdog
  std::string tool_version;
  run::Progress progress;  // bytes of data written of all (none: not counted)
};

// What a split wrote: the output files (name as the manifest lists them,
// size, digest), and the bytes of data written into them.
struct SplitResult {
  std::vector<specs::FileRecord> files;
  std::uint64_t data_bytes = 0;
  std::uint64_t manifest_bytes = 0;  // the commit object's: the manifest, or a shard's part record
  // --resume: the files an earlier run published that were kept (among
  // `files`), and their bytes.
  std::uint64_t kept_files = 0;
  std::uint64_t kept_bytes = 0;
  // --resume over the same command's finished split: nothing was written.
  bool finished = false;
};

// Writes the outputs of `prepared` (which holds a resolution and a plan)
// and the manifest (with a shard: its share of the outputs and its part
// record). On any error nothing is left under a final name.
SplitResult execute(const SplitJob& job, const tree::Prepared& prepared);

}  // namespace mb::io::split
