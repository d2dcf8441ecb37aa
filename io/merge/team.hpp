#pragma once
// A team merge (MergeTeam): the large compressed split datasets shared out
// by chunk bands among the ranks (see team.cpp).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/selection.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merge {

// A split dataset whose chunk bands (chunk rows along its axis) the ranks
// of a team merge share out: chunked, compressed, large.
struct SharedLeaf {
  std::size_t axis = 0;
  Shape dims, chunk;
  Segment rows;  // this rank's rows (whole bands but at the end)
};

// The split datasets shared out, decided at input 0.
struct TeamState {
  std::map<std::string, SharedLeaf> shared;
};

// This rank's rows of the split dataset at `path` (created as `dst`), when
// the team shares it out; none when rank 0 writes it whole (decided at
// input 0, for every rank alike).
std::optional<Segment> team_rows(const Context& ctx, TeamState& state, const std::string& path, const MergedLeaf& leaf,
                                 hid_t dst);
// The places, cut to the rows `rows` along `axis` of the batch side.
std::vector<SegmentPlace> clip_places(const std::vector<SegmentPlace>& places, std::size_t axis, const Segment& rows);
// Rank 0: every other rank's chunks of the shared datasets, moved as stored
// from its scratch file into `out`.
void gather_team_chunks(const Context& ctx, const TeamState& state, hid_t out);
// Rank q's scratch file: DIR/.NAME.rank-q-of-P.scratch
std::string scratch_path(const std::string& output, std::uint64_t rank, std::uint64_t size);

}  // namespace mb::io::merge
