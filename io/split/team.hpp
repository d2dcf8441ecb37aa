#pragma once
// A split by a team (mpirun, srun): rank R of P writes shard R of P; once
// every rank has published its files and part record, rank 0 writes the
// manifest and removes the part records. A failure on any rank: every rank
// abandons, none publishes. No HDF5 types here (cli/ calls it).
#include <functional>
#include <optional>
#include <utility>

#include "core/shards.hpp"
#include "io/run/team.hpp"
#include "io/split/split.hpp"
#include "io/tree/prepare.hpp"

namespace mb::io::split {

// How one process's share of a split runs: its shard, a vote before it
// publishes, and whether it logs and prints (a team: rank 0 only).
struct ShareRun {
  std::optional<Shard> shard;
  std::function<void()> before_publish;
  bool report = true;
};

using Share = std::pair<tree::Prepared, SplitResult>;

// Runs `once` as this rank's share of `team`'s split into `output_dir`. On
// rank 0 the result lists every file of the manifest; data_bytes is the
// team's sum on every rank.
Share split_as_team(run::Team& team, const std::string& output_dir,
                    const std::function<Share(const ShareRun&)>& once);

}  // namespace mb::io::split
