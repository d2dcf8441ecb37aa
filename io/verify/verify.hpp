#pragma once
// microbatch verify: a split directory (local, or a URL prefix) checked
// against its manifest without merging it: every file present, of its
// recorded size and content digest, holding the rows the manifest gives
// each split dataset; files in a local directory or under an S3 prefix that
// the manifest does not list are reported too. For a training node after a download, and for CI.
#include <cstdint>
#include <string>
#include <vector>

#include "core/source.hpp"
#include "io/store/store.hpp"

namespace mb::io::verify {

// What is wrong with one file, if anything.
enum class Problem { None, Missing, Size, Digest, Rows };
const char* problem_name(Problem problem);  // "intact", "missing", "size", "digest", "rows"

struct FileCheck {
  std::string name;           // as the manifest lists it
  std::uint64_t size = 0;     // the manifest's
  Problem problem = Problem::None;
  std::string message;        // what differs, one line naming the file; empty when intact
};

struct Report {
  std::string manifest;  // as shown
  std::string split_id;
  std::vector<FileCheck> files;      // the manifest's, in its order
  std::vector<std::string> extra;    // files beside the manifest that it does not list
  bool listed = false;               // a local directory or S3 prefix, looked through for `extra`
  std::string unlisted;              // why not, when not
  bool intact() const;
};

// Reads the manifest of `target` (a directory, a URL ending in "/", or the
// manifest's URL) and checks every file it lists, `threads` digests at a
// time; `split` is the split it names (store::open_split), whose place is
// listed for files the manifest does not list. A target that names no
// split is a usage error; a manifest that cannot be read, or whose split id
// does not match its contents, is an mb::Error as for merge; what is wrong
// with the files is in the report.
Report verify(const Source& target, const std::optional<store::Member>& split, unsigned threads);

}  // namespace mb::io::verify
