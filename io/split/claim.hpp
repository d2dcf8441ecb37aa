#pragma once
// The place of a whole split (one process, or a team's rank 0 for the team)
// claimed before any work, on every kind of place alike: a directory is
// created if missing and locked, and what killed runs left there goes; the
// place's split outputs are refused without `force`, and the input among
// them even with it; with `force` the manifest goes first (so nothing there
// passes for finished from then on), then the part records, then the files,
// unless the run keeps them until its own manifest is up.
#include <memory>
#include <string>
#include <vector>

#include "core/source.hpp"
#include "io/store/store.hpp"

namespace mb::io::split {

using store::Claimed;  // `earlier`: an earlier split's files left in place (`keep_files`), by name

// `keep_files`: earlier microbatch files stay (a new file of the same name
// overwrites one; the rest are removed after the commit) — for a place
// whose writes replace, where removing first costs a request per file.
Claimed claim_split(store::WritableStore& place, bool force, const Source& input, bool keep_files);

// A --resume team's place, claimed by rank 0 for the team before any work:
// its lock (what killed runs left removed), the input refused among the
// outputs; what stays is each rank's to decide for its shard
// (io/split/resume.hpp).
Claimed claim_for_team(store::WritableStore& place, const Source& input);

// Anything under a split output's name (a temporary's too) that is not a
// regular file is never removed or replaced, nor is the input under a split
// output's name: refused, even with --force.
void refuse_input_among(const store::Store& place, const std::vector<store::Entry>& earlier, const Source& input);

}  // namespace mb::io::split
