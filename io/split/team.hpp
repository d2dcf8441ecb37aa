#pragma once
// A split by a team (mpirun, srun): rank 0 prepares the output directory
// for the team before any work (locks it, refuses or with --force removes
// an earlier split, creates it if missing); rank R of P then writes shard R
// of P; once every rank has published its files and part record, rank 0
// writes the manifest and removes the part records. A failure or an
// interruption on any rank before the manifest is written: every rank
// stops, and rank 0 removes what the ranks published (and the directory
// if it made it). The same on every kind of place (io/store): on an S3
// prefix each rank uploads its shard.
// No HDF5 types here (cli/ calls it).
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "core/shards.hpp"
#include "io/run/team.hpp"
#include "io/split/split.hpp"
#include "io/store/store.hpp"
#include "io/tree/prepare.hpp"

namespace mb::io::split {

// How one process's share of a split runs: its shard, a vote before it
// publishes, whether it logs and prints (a team: rank 0 only), and whether
// the directory was prepared for it (a team's: nothing of this split can
// be there yet, so --force has nothing of its own left to remove).
struct ShareRun {
  std::optional<Shard> shard;
  std::function<void()> before_publish;
  bool report = true;
  bool prepared_directory = false;
};

// Where a team's split goes, as the command line says.
struct TeamOutput {
  store::WritableStore* place = nullptr;
  bool force = false;
  bool resume = false;  // each rank keeps what an interrupted run of the team published of its shard
  Source input;  // never removed from the place
};

using Share = std::pair<tree::Prepared, SplitResult>;

// Runs `once` as this rank's share of `team`'s split into `output.place`. On
// rank 0 the result lists every file of the manifest; data_bytes is the
// team's sum on every rank.
Share split_as_team(run::Team& team, const TeamOutput& output, const std::function<Share(const ShareRun&)>& once);

}  // namespace mb::io::split
