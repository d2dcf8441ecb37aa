#include "io/split/team.hpp"

#include "io/split/parts.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {

Share split_as_team(run::Team& team, const std::string& output_dir,
                    const std::function<Share(const ShareRun&)>& once) {
  run::Consensus votes(team);
  const bool lead = team.rank() == 0;
  try {
    auto share = once(ShareRun{Shard{team.rank(), team.size()}, [&] { votes.agree(); }, lead});
    votes.agree();  // every rank's files and part record are published
    if (lead) {
      finish_split(output_dir);
      remove_part_records(output_dir, team.size());
    }
    votes.agree();  // the manifest is written
    share.second.data_bytes = team.sum(share.second.data_bytes);
    if (lead) share.second.files = specs::read_manifest(output_dir).files;
    return share;
  } catch (...) {
    votes.abandon();
    throw;
  }
}

}  // namespace mb::io::split
