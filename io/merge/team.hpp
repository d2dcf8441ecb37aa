#pragma once
// Shared datasets: the large compressed split datasets of a merge, encoded
// by chunk bands into scratch files and moved into the output last, chunk
// by chunk in one canonical order (see team.cpp). A team merge shares the
// bands out among its ranks; one process is a team of one.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/selection.hpp"
#include "io/h5/handle.hpp"
#include "io/merge/steps.hpp"
#include "io/publish/outputs.hpp"

namespace mb::io::merge {

// A split dataset whose chunk bands (chunk rows along its axis) the ranks
// share out: chunked, compressed, large.
struct SharedLeaf {
  std::size_t axis = 0;
  Shape dims, chunk;
  Segment rows;    // this rank's rows (whole bands but at the end)
  h5::Id scratch;  // rank 0: its copy in its scratch file (the others' output is their scratch file)
};

// Where a team's scratch files go: in the directory of the file rank 0
// writes (the output's temporary beside it, or the local spool file of an
// object output), rank q's named .NAME.rank-q-of-P.scratch after the
// output's member NAME. So they sit on the filesystem the written file
// does, wherever the output goes, and a rerun's leftovers cleaner (which
// holds the output's lock: io/publish/leftovers.hpp) knows them.
struct ScratchPlace {
  std::string dir;
  std::string name;
  std::uint64_t size = 1;

  std::string path(std::uint64_t rank) const;
};

// The place for `job`; `written` is the file rank 0 writes ("" on the other
// ranks, whose output is a local directory's member: cli/ refuses others).
ScratchPlace scratch_place(const MergeJob& job, const std::string& written);

// The split datasets shared out, decided at input 0, and rank 0's scratch
// file (the other ranks' output is theirs).
struct TeamState {
  ScratchPlace place;
  std::optional<publish::ScratchFile> own;  // made at the first shared dataset
  h5::Id file;
  std::map<std::string, SharedLeaf> shared;
};

// Whether this process writes the output: rank 0 of a team, or the only one.
bool leads(const MergeJob& job);

// Where this rank writes its rows of the split dataset at `path` (created
// as `dst` in its output) when it is shared out; none when rank 0 writes it
// whole into the output (decided at input 0, for every rank alike).
struct Share {
  Segment rows;
  hid_t target;
};
std::optional<Share> team_share(const Context& ctx, TeamState& state, const std::string& path, const MergedLeaf& leaf,
                                hid_t dst);
// The places, cut to the rows `rows` along `axis` of the batch side.
std::vector<SegmentPlace> clip_places(const std::vector<SegmentPlace>& places, std::size_t axis, const Segment& rows);
// Rank 0, once every input is merged: closes its scratch file.
void close_own_scratch(TeamState& state);
// Rank 0, once every rank has written its share: every shared dataset's
// chunks, moved as stored from the ranks' scratch files into `out`.
void gather_shared_chunks(const Context& ctx, const TeamState& state, hid_t out);

}  // namespace mb::io::merge
