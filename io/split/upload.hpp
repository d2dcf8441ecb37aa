#pragma once
// A split onto an S3 prefix (split -o s3://BUCKET/PREFIX/): the prefix
// checked before any work (credentials, bucket, an earlier split there),
// the local spool the files are written to, and the uploads planned.
#include <optional>
#include <string>
#include <vector>

#include "core/settings.hpp"
#include "io/publish/uploader.hpp"

namespace mb::io::split {

struct RemoteOutput {
  std::string prefix;                     // s3://BUCKET/PREFIX/, ending in "/"
  std::optional<std::string> keep_local;  // --keep-local DIR: the files are written and kept there
  unsigned uploads = 4;                   // concurrent uploads
  bool claimed = false;                   // a team's rank 0 claimed the prefix for this run
  Settings settings;                      // the objects' addresses, how requests behave, $TMPDIR
};

// The directory the files are written in: --keep-local's, else a new one
// under $TMPDIR (default /tmp), removed when the run ends.
std::string spool_directory(const RemoteOutput& out);

// The files of a run (by name; their local copies at `paths`, "" for those
// of other shards) and the name of the object that commits them: the
// manifest, or a shard's part record.
struct Spooled {
  const std::vector<std::string>& names;
  const std::vector<std::string>& paths;
  std::string last;
  std::string spool;  // the directory of `paths`
};

// The object each file goes to, the last one's, and the earlier split's
// objects that this one does not overwrite.
publish::UploadPlan upload_plan(const RemoteOutput& out, const Spooled& files,
                                const std::vector<std::string>& earlier);

}  // namespace mb::io::split
