#include "core/launcher.hpp"

#include <charconv>
#include <cstring>

namespace mb {
namespace {

std::optional<std::uint64_t> number(const Environment& env, const char* name) {
  const char* text = env(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  std::uint64_t value = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// A task `rank` of `tasks`, when both are set and make sense.
std::optional<Launch> task(const Environment& env, const char* launcher, const char* tasks, const char* rank) {
  const auto size = number(env, tasks);
  const auto index = number(env, rank);
  if (!size || !index || *size == 0 || *index >= *size) return std::nullopt;
  return Launch{launcher, *size, *index};
}

}  // namespace

std::optional<Launch> detect_launch(const Environment& env) {
  // OpenMPI's mpirun sets these in every rank's environment.
  if (auto launch = task(env, "mpirun", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")) return launch;
  // MPICH's hydra and srun --mpi=pmi2.
  if (auto launch = task(env, "PMI", "PMI_SIZE", "PMI_RANK")) return launch;
  // srun: the step's variables are set in its tasks only, never in the batch
  // script sbatch runs (which also carries SLURM_NTASKS and SLURM_PROCID=0).
  if (env("SLURM_STEP_ID") == nullptr) return std::nullopt;
  return task(env, "srun", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID");
}

}  // namespace mb
