// Team without MPI: never formed (Team::supported() is false; cli/ refuses a
// multi-task launch before constructing one).
#include "core/error.hpp"
#include "io/run/team.hpp"

namespace mb::io::run {

bool Team::supported() { return false; }

Team::Team(const Launch&) {
  throw Error("this build has no MPI: microbatch-mpi (package microbatch-mpi) runs as a team under mpirun and srun",
              ErrorKind::Usage);
}

void Team::leave() noexcept {}

std::optional<std::uint64_t> Team::first_failed(bool ok) {
  if (ok) return std::nullopt;
  return rank_;
}

std::uint64_t Team::sum(std::uint64_t value) { return value; }

std::vector<bool> Team::differing(const std::vector<std::uint64_t>& values) {
  return std::vector<bool>(values.size(), false);
}

}  // namespace mb::io::run
