#pragma once
// A team: the P processes a launcher (mpirun, srun) started, cooperating on
// one job through MPI. Only the MPI build (cmake -DMB_MPI=ON) can form one;
// without MPI, Team::supported() is false and a multi-task launch is
// refused (cli/). No MPI types here: cli/ uses it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/launcher.hpp"

namespace mb::io::run {

class Team {
 public:
  // This build links MPI.
  static bool supported();

  // Joins the team `launch` describes (MPI_Init); the rank and size are
  // MPI's, checked against the launcher's. Only one per process.
  explicit Team(const Launch& launch);
  // Leaves MPI (MPI_Finalize) if this process joined a team; a no-op
  // otherwise. main calls it last, after the error line is printed, not the
  // destructor: MPI_Finalize waits for every member, and mpirun kills the
  // others as soon as one exits non-zero, so a member that left first could
  // be killed before it said why it stopped.
  static void leave() noexcept;
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  std::uint64_t rank() const { return rank_; }
  std::uint64_t size() const { return size_; }

  // Collective: every member passes whether its step succeeded; returns the
  // lowest rank that failed, none when all succeeded.
  std::optional<std::uint64_t> first_failed(bool ok);
  // Collective: the sum of every member's `value`.
  std::uint64_t sum(std::uint64_t value);
  // Collective (every member passes as many values): for each value,
  // whether it differs between members.
  std::vector<bool> differing(const std::vector<std::uint64_t>& values);

 private:
  std::uint64_t rank_ = 0, size_ = 1;
};

// Steps a team takes together: after each step every member votes, and the
// next step starts only when all succeeded. A member whose step throws
// votes no from its handler (abandon); every member then stops at that
// same vote, so all cast the same number of votes and none waits forever.
class Consensus {
 public:
  explicit Consensus(Team& team) : team_(team) {}

  // This member's step succeeded: waits for the others; throws mb::Error
  // naming the first member that failed.
  void agree();
  // This member failed before its vote: votes no (once; no-op after a
  // failed vote, which every member saw). Never throws: it runs in a
  // handler, whose own error is the one to report.
  void abandon() noexcept;
  // After a failed vote, once this member has cleaned up after itself: waits
  // for every other member to have done so, so that what one removes last
  // (rank 0's output directory) is not in another's way. Never throws.
  void settle() noexcept;

 private:
  Team& team_;
  bool broken_ = false;
};

// One thing every member of a team must have been given alike: what
// messages call it, and its value.
struct Term {
  std::string name;
  std::string value;
};

// Collective, before any work: when a term differs between members (ranks
// started with other options, inputs or spec files: `mpirun ... : ...`, or
// files that differ between nodes), every member throws the same usage
// error naming the terms that differ, with this member's values.
void agree_on(Team& team, const std::vector<Term>& terms);

}  // namespace mb::io::run
