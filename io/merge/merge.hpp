#pragma once
// The merge job: microbatch files back into one batch. Split leaves are
// concatenated, replicated leaves and attributes must be equal in every
// input, reducers reduce. No HDF5 types here (cli/ calls it).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/layout.hpp"
#include "core/source.hpp"
#include "core/spec.hpp"
#include "io/run/progress.hpp"
#include "io/store/store.hpp"
#include "io/tree/spec_choice.hpp"
#include "io/transfer/policy.hpp"
#include "specs/manifest.hpp"

namespace mb::io::merge {

struct MergeInput {
  Source source;
  std::string label;  // "microbatch 3 (dir/microbatch-00003.h5)", for messages
};

// A merge by the P ranks of mpirun/srun (microbatch-mpi). The large
// compressed split datasets are shared out by bands of chunk rows: every
// rank encodes its share of the bands into a scratch file of its own next
// to the output, and rank 0, which writes everything else as one process
// would, moves the other ranks' stored chunks into the output (raw, not
// recompressed) and publishes it. `agree` is the team's vote (throws when
// a rank failed); every rank calls it three times: its share of the inputs
// verified against the manifest, scratch files written, output complete.
struct MergeTeam {
  std::uint64_t rank = 0, size = 1;
  std::function<void()> agree;
};

struct MergeJob {
  std::vector<MergeInput> inputs;
  std::vector<Source> read_besides;  // files read besides the inputs (their manifest): never the output
  // Where the merged file goes: member `output_name` of `place` (which the
  // caller owns; a team's is a local directory); `output` names it in
  // messages. A team's scratch files are named after `output_name`, beside
  // the file rank 0 writes (team.hpp).
  store::WritableStore* place = nullptr;
  std::string output_name;
  std::string output;
  bool force = false;
  DataParallel dp;  // the layout the microbatches were split with
  FileLayout layout = FileLayout::PerMicrobatch;
  std::uint64_t cp_degree = 1;  // --cp-degree
  bool cp_pad = false;          // --cp-pad: packed documents were padded to a multiple of 2C
  // Split leaves become virtual datasets over the inputs (recorded by their
  // absolute paths) instead of copies.
  bool virtual_datasets = false;
  transfer::Policy policy;
  run::Progress progress;  // bytes of the input files merged of all (none: not counted)
  // The split the inputs come from, when known: inputs[i] is its files[i].
  // Each input's size and digest are checked against it before anything is
  // written (unless !verify), and each split dataset's length in each input
  // against its rows.
  const specs::Manifest* manifest = nullptr;
  bool verify = true;
  std::optional<MergeTeam> team;
};

// Opens every input, resolves `spec` against the first input's tree, and
// writes the merged file, checking on the way that every input has the
// first's tree (same groups, datasets and attribute names). On any error no
// file is left at job.output.
struct MergeResult {
  std::uint64_t datasets = 0;    // in the merged file (further names of one dataset not counted)
  std::uint64_t output_bytes = 0;  // the merged file's size (rank 0 of a team)
  std::uint64_t data_bytes = 0;  // of the inputs, as the progress counts them
  std::optional<tree::PresetSpec> preset;  // the preset whose spec was used
};
// The spec is chosen (io/tree/spec_choice) for the first input's tree, read once.
MergeResult execute(const MergeJob& job, const tree::SpecRequest& spec);

}  // namespace mb::io::merge
