#include <fmt/format.h>
#include <xxhash.h>

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

namespace {

std::uint64_t hash(const std::string& text) { return XXH3_64bits(text.data(), text.size()); }

}  // namespace

void agree_on(Team& team, const std::vector<Term>& terms) {
  std::string names;
  for (const auto& t : terms) names += t.name + '\n';
  // Other subcommands or builds list other terms: then their values cannot be compared one by one.
  const std::vector<bool> shape = team.differing({terms.size(), hash(names)});
  if (shape[0] || shape[1])
    throw usage_error(fmt::format("the {} ranks were started with different commands (other subcommands); start "
                                  "every rank with the same command",
                                  team.size()));
  std::vector<std::uint64_t> values;
  for (const auto& t : terms) values.push_back(hash(t.value));
  const std::vector<bool> differs = team.differing(values);
  std::string named, mine;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (!differs[i]) continue;
    named += (named.empty() ? "" : ", ") + terms[i].name;
    mine += fmt::format("{}{} {}", mine.empty() ? "" : "; ", terms[i].name,
                        terms[i].value.empty() ? "(not given)" : terms[i].value);
  }
  if (!named.empty())
    throw usage_error(fmt::format("the {} ranks were not given the same command: {} differ{} (rank {} has {}); start "
                                  "every rank with the same command and files; nothing was written",
                                  team.size(), named, named.find(", ") == std::string::npos ? "s" : "", team.rank(),
                                  mine));
}

void Consensus::settle() noexcept {
  try {
    team_.first_failed(true);
  } catch (...) {
    // MPI itself failed: the launcher ends the other members.
  }
}

}  // namespace mb::io::run
