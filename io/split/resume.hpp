#pragma once
// split --resume: what an interrupted run of the same command left, and
// what of it a rerun keeps. A run of the same command is one with the same
// identity: the input's (name, size, modification time, ETag) and the
// manifest it will write but for its files' records (tool version, spec,
// options, plan). Its journal (specs/journal.hpp) says which files it
// published; each is kept only if its bytes still have the size and digest
// recorded there. Over the same command's finished split the run has
// nothing to do; over another command's split, finished or not, it refuses
// as a plain split does.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/source.hpp"
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
  unsigned threads = 1;            // to digest the files kept
};

struct Resumed {
  std::unique_ptr<store::Claim> claim;  // the place's, held for the run
  // The same command's finished split is there: its manifest's text.
  std::optional<std::string> finished;
  // By file index: the record of each file kept as it stands.
  std::vector<std::optional<specs::FileRecord>> kept;
};

// Claims the place for a --resume run (as claim_split: its lock, the
// killed runs' temporaries removed, the input among the outputs refused),
// then decides what stays: of a finished split of the same command (its
// files checked against the manifest, the input not modified after it)
// everything; of an unfinished one the files whose journal entries are the
// run's and whose bytes match them, every other file of the split and
// entry being removed. Anything else there is refused (mb::Error) as a
// plain split refuses it.
Resumed claim_resumed(store::Store& place, const ResumeRequest& request);

}  // namespace mb::io::split
