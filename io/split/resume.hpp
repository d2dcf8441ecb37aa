#pragma once
// split --resume: what an interrupted run of the same command left, and
// what of it a rerun keeps. A run of the same command is one with the same
// identity: the input's (name, size, modification time, ETag) and the
// manifest it will write but for its files' records (tool version, spec,
// options, plan). Its journal (specs/journal.hpp) says which files it
// published; each is kept only if its bytes still have the size and digest
// recorded there. Over the same command's finished split (or a shard's
// finished part) the run has nothing to do; over another command's split,
// finished or not, it refuses as a plain split does. The journal entries
// stay until the manifest is written (by the split, a team's rank 0, or
// finish), so that every run of the split, whole or by shards, can keep
// what any other published.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/shards.hpp"
#include "core/source.hpp"
#include "io/split/parts.hpp"
#include "io/store/store.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {

// The identity of a run: a digest of the input's identity and the manifest
// text the run plans (its files listed by name only).
std::string run_identity(const Source& input, const std::string& planned_manifest);

struct ResumeRequest {
  const Source& input;
  const specs::Manifest& planned;  // files by name only, no split id
  std::string run;                 // run_identity
  FileRange mine;                  // the files this run writes
  const PartRecord* part = nullptr;  // a shard's (its files' records empty); none: a whole split
  unsigned threads = 1;              // to digest the files kept
};

// Nothing left to do: the files' records (this run's share) and the size of
// the commit object that stands (the manifest, or the shard's part record).
struct Finished {
  std::vector<specs::FileRecord> files;
  std::uint64_t bytes = 0;
  bool manifest = false;  // the whole split is finished, not only this shard
};

struct Resumed {
  std::unique_ptr<store::Claim> claim;  // the place's (a shard's own lock), held for the run
  std::optional<Finished> finished;
  // By file index (of the whole split): the record of each file kept.
  std::vector<std::optional<specs::FileRecord>> kept;
};

// Claims the place for a --resume run, as a plain run claims it (a whole
// split: the directory's lock, the killed runs' temporaries removed; a
// shard: its own lock), refusing the input among the outputs; then decides
// what stays. Of a finished split of the same command (the input not
// modified after its manifest was written) the run's share of the files,
// checked against the manifest; of a shard's finished part, its files
// checked against it. Else, of the run's files, those whose journal entries
// are the run's and whose bytes match them; the run's other files and
// entries there are removed (a whole split: the part records of shards of
// the split too). Anything else is refused (mb::Error) as a plain split
// refuses it.
Resumed claim_resumed(store::WritableStore& place, const ResumeRequest& request);

// A finished split's journal entries removed (best effort: one left is
// harmless once the manifest is there): of the files `names`.
void remove_journal(store::WritableStore& place, const std::vector<std::string>& names);

}  // namespace mb::io::split
