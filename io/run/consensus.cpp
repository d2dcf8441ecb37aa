#include <fmt/format.h>

#include "core/error.hpp"
#include "io/run/team.hpp"

namespace mb::io::run {

void Consensus::agree() {
  if (broken_) throw Error("internal: a vote after the team stopped");
  const auto failed = team_.first_failed(true);
  if (!failed) return;
  broken_ = true;
  throw Error(fmt::format("rank {} of {} failed (its own message says why); this rank stopped too",
                          *failed, team_.size()));
}

void Consensus::abandon() noexcept {
  if (broken_) return;
  broken_ = true;
  try {
    team_.first_failed(false);
  } catch (...) {
    // MPI itself failed: the launcher ends the other members.
  }
}

void Consensus::settle() noexcept {
  try {
    team_.first_failed(true);
  } catch (...) {
    // MPI itself failed: the launcher ends the other members.
  }
}

}  // namespace mb::io::run
