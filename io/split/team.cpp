#include "io/split/team.hpp"

#include <spdlog/spdlog.h>

#include "io/split/claim.hpp"
#include "io/split/parts.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {
namespace {

// Never throws: the run's own error is the one to report, and every rank
// must still reach the team's last vote.
void undo_published(store::WritableStore& place) noexcept {
  try {
    remove_split_outputs(place);
  } catch (const std::exception& e) {
    spdlog::error("{} (the split did not finish; remove its files)", e.what());
  }
}

}  // namespace

Share split_as_team(run::Team& team, const TeamOutput& output, const std::function<Share(const ShareRun&)>& once) {
  run::Consensus votes(team);
  const bool lead = team.rank() == 0;
  // Rank 0's, for the team: held until the manifest is written, removed
  // last (after every rank settled) if the split fails and rank 0 made it.
  Claimed claimed;
  std::optional<Share> share;
  bool undo = false;  // ranks may have published: rank 0 removes it all if the split does not finish
  std::string manifest;  // rank 0's, once written
  try {
    if (lead)
      claimed = output.resume ? claim_for_team(*output.place, output.input)
                              : claim_split(*output.place, output.force, output.input, false);
    votes.agree();  // the place is the team's: no other run writes into it
    const ShareRun run{.shard = Shard{team.rank(), team.size()},
                       .before_publish =
                           [&] {
                             votes.agree();
                             undo = true;
                           },
                       .report = lead,
                       .prepared_directory = true};
    share = once(run);
    votes.agree();  // every rank's files and part record are published
    // --resume over the team's finished split: every rank found the manifest (rank 0 holds the place).
    const bool finished = share->second.finished;
    if (lead && !finished) {
      manifest = finish_claimed(*output.place);
      undo = false;  // the manifest is written: the split is finished
      remove_part_records(*output.place, team.size());
    }
    if (lead && finished) manifest = output.place->read_text(specs::kManifestName).value_or("");
    if (lead) claimed.claim->keep();
    votes.agree();
  } catch (...) {
    votes.abandon();
    // --resume: what the ranks published stays, for a rerun to keep.
    if (lead && undo && !output.resume) undo_published(*output.place);
    votes.settle();
    throw;
  }
  share->second.data_bytes = team.sum(share->second.data_bytes);
  share->second.kept_files = team.sum(share->second.kept_files);
  share->second.kept_bytes = team.sum(share->second.kept_bytes);
  if (lead) {
    share->second.files = specs::parse_manifest(manifest, output.place->shown(specs::kManifestName)).files;
    share->second.manifest_bytes = manifest.size();
  }
  return std::move(*share);
}

}  // namespace mb::io::split
