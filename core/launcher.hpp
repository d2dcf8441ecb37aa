#pragma once
// Which launcher started this process, as one task of how many: mpirun
// (OpenMPI), srun (a Slurm job step) or a PMI launcher (MPICH's hydra,
// srun --mpi=pmi2). Read from the variables they set, before any MPI call:
// a build without MPI must refuse to run as P copies writing the same
// files, and the MPI build starts MPI only when there is a team to join.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace mb {

struct Launch {
  std::string launcher;  // "mpirun", "srun", "PMI": what messages call it
  std::uint64_t tasks = 1;
  std::uint64_t rank = 0;
};

// A variable's value, or null when unset (std::getenv, or a map in tests).
using Environment = std::function<const char*(const char*)>;

// The launch that started this process; none when no launcher did. A
// Slurm batch script itself (sbatch --ntasks=4 runs one copy of it) is not
// a launch: only a job step (srun) counts. Malformed values: none.
std::optional<Launch> detect_launch(const Environment& env);

}  // namespace mb
