#pragma once
// split --shard K/P and finish: shards of one split share its output
// directory. Each shard writes its own share of the files, then, last and
// atomically, its part record (part-0000K-of-0000P.json): the input it read
// (path, size, mtime), the manifest it would write but for the other
// shards' file records, its file range and its files' records. finish
// checks that all P part records are there and agree, and writes
// manifest.json, the one a one-process split writes. On an S3 prefix the
// same happens with objects: files first, the part record last.
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/shards.hpp"
#include "core/source.hpp"
#include "io/publish/outputs.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {

struct PartRecord {
  Shard shard;
  FileRange range;
  std::uint64_t file_count = 0;  // of the whole split
  std::string input;
  std::uint64_t input_size = 0;
  std::int64_t input_mtime_ns = 0;
  std::string input_etag;  // a remote input's version (its ETag); empty for a local file
  // The manifest's head (its files listed by name, size 0, no digest; no
  // split id) and its per-dataset records: what every shard must agree on.
  nlohmann::ordered_json head;
  std::string datasets;
  std::vector<specs::FileRecord> files;  // this shard's, in order
};

// part-00001-of-00004.json
std::string part_name(const Shard& shard);

// The part record as written, and back (mb::Error naming `where` or `path`).
std::string part_text(const PartRecord& part);
PartRecord parse_part(const std::string& text, const std::string& where);
PartRecord read_part(const std::string& path);

// What must be equal in two shards' part records of one split.
std::string split_of(const PartRecord& part);

// Input size and mtime, as the part records them.
void stat_input(const Source& input, PartRecord& part);

// The output directory for one shard: created if missing, locked for this
// shard only (.microbatch.lock.shard-K-of-P), so shards run concurrently.
// It may hold other shards' files and part records of the same split;
// anything else (a finished manifest, this shard's files or part record,
// another split's files or parts) is refused, or with `force` the manifest
// and this shard's own files and part record are removed (manifest first).
[[nodiscard]] publish::OutputDirectory prepare_shard_dir(const std::string& dir, bool force, const PartRecord& ours);

// The same for a shard onto an S3 prefix (s3://BUCKET/PREFIX/), from its
// listing, before any work: with `force` the manifest is deleted, then this
// shard's part record, then its files. There is no lock: two runs of one
// shard at once are the user's to avoid.
void claim_shard_prefix(const std::string& prefix, bool force, const PartRecord& ours);

// What finish sees of the place a split's shards wrote to: a directory, or
// an S3 prefix.
struct SplitPlace {
  std::string shown;                                         // the directory or prefix, as messages name it
  std::map<std::string, std::uint64_t> outputs;              // split outputs under their final names: sizes
  std::function<std::string(const std::string& name)> read;  // a part record's text
  std::function<std::string(const std::string& name)> path;  // an output as messages name it
};

// The manifest of the place's split: checks that the P part records are all
// there and agree, that every file they list is present at its recorded
// size, and that no other split output is.
std::string finished_manifest(const SplitPlace& place);

// finish DIR (or s3://BUCKET/PREFIX/): writes DIR/manifest.json, the one
// a one-process split writes. Returns the manifest's name. On a store there
// is no lock: the manifest object is put once the listing checked out.
std::string finish_split(const std::string& dir);
// The same, by the holder of the directory's lock (a team's rank 0, which
// took it before any work).
std::string finish_locked_split(const std::string& dir);
// The same on an S3 prefix; returns the manifest's text.
std::string finish_remote_split(const std::string& prefix);

// A team's rank 0, before any work, for a team's split onto an S3 prefix:
// any split output there (a manifest, files, part records) is refused
// without `force`; with it, the manifest is deleted first, then the part
// records, then the rest.
void claim_team_prefix(const std::string& prefix, bool force);

// Removes every split output under a final name in `dir` or under an S3
// prefix (part records first), none of which can pass for finished without
// a manifest: a team whose run failed after its ranks published undoes it.
// Only by the holder of the directory's lock, which kept every other run
// out (a prefix has none: one run per prefix).
void remove_split_outputs(const std::string& dir);

// After finish, the P part records (files, or objects under a prefix) are
// no longer needed: a split written by a team (mpirun) leaves the directory
// a one-process split leaves.
void remove_part_records(const std::string& dir, std::uint64_t count);

}  // namespace mb::io::split
