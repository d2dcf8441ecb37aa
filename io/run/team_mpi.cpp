// Team over MPI (the MPI build only; io/run/team_none.cpp otherwise).
#include <fmt/format.h>
#include <mpi.h>

#include "core/error.hpp"
#include "io/run/team.hpp"

namespace mb::io::run {
namespace {

void check(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw Error(fmt::format("MPI: {} failed: {}", call, std::string(text, static_cast<std::size_t>(length))));
}

bool joined = false;  // MPI_Init succeeded: leave() finalizes

}  // namespace

bool Team::supported() { return true; }

Team::Team(const Launch& launch) {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided), "MPI_Init_thread");
  joined = true;
  // Errors come back as codes (check() turns them into mb::Error), never abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  rank_ = static_cast<std::uint64_t>(rank);
  size_ = static_cast<std::uint64_t>(size);
  if (size_ != launch.tasks)
    throw Error(fmt::format("{} started {} tasks, but MPI sees {} (is this the MPI the build links?{})",
                            launch.launcher, launch.tasks, size_,
                            launch.launcher == "srun" ? " srun needs --mpi=pmix" : ""));
}

void Team::leave() noexcept {
  if (!joined) return;
  joined = false;
  MPI_Finalize();
}

std::optional<std::uint64_t> Team::first_failed(bool ok) {
  const unsigned long long mine = ok ? size_ : rank_;
  unsigned long long lowest = 0;
  check(MPI_Allreduce(&mine, &lowest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  if (lowest == size_) return std::nullopt;
  return lowest;
}

std::uint64_t Team::sum(std::uint64_t value) {
  const unsigned long long mine = value;
  unsigned long long total = 0;
  check(MPI_Allreduce(&mine, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  return total;
}

std::vector<bool> Team::differing(const std::vector<std::uint64_t>& values) {
  const std::vector<unsigned long long> mine(values.begin(), values.end());
  std::vector<unsigned long long> low(mine.size()), high(mine.size());
  const int n = static_cast<int>(mine.size());
  check(MPI_Allreduce(mine.data(), low.data(), n, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  check(MPI_Allreduce(mine.data(), high.data(), n, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  std::vector<bool> out(mine.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = low[i] != high[i];
  return out;
}

}  // namespace mb::io::run
