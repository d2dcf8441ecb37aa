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
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/shards.hpp"
#include "core/source.hpp"
#include "io/store/store.hpp"
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
// The lock a shard holds in a directory (.microbatch.lock.shard-K-of-P).
std::string shard_lock_name(const Shard& shard);

// The part record as written, and back (mb::Error naming `where`).
std::string part_text(const PartRecord& part);
PartRecord parse_part(const std::string& text, const std::string& where);

// What must be equal in two shards' part records of one split.
std::string split_of(const PartRecord& part);

// Input size and mtime, as the part records them.
void stat_input(const Source& input, PartRecord& part);

// Claims the place for one shard (a directory: created if missing, locked
// for this shard only, .microbatch.lock.shard-K-of-P, so that shards run
// concurrently; a prefix has no lock: two runs of one shard at once are the
// user's to avoid). It may hold other shards' files and part records of the
// same split; anything else (a finished manifest, this shard's files or
// part record, another split's files or parts, the input under an
// output's name) is refused, or with `force` the manifest and this shard's
// own files and part record are removed (manifest first, then the part
// record, then the files).
[[nodiscard]] std::unique_ptr<store::Claim> claim_shard(store::WritableStore& place, bool force, const PartRecord& ours,
                                                        const Source& input);

// The manifest of the place's split: checks that it has none yet, that the
// P part records are all there and agree, that every file they list is
// present at its recorded size, and that no other split output is.
std::string finished_manifest(const store::Store& place);

// finish DIR (or s3://BUCKET/PREFIX/): claims the place (a directory's lock:
// finish and split write the manifest one at a time), then commits the
// manifest a one-process split writes. Returns the manifest's text.
std::string finish(store::WritableStore& place);
// The same, by the holder of the place's claim (a team's rank 0, which
// claimed it before any work).
std::string finish_claimed(store::WritableStore& place);

// Removes every split output under a final name, the manifest first, then
// the part records, then the files, none of which can pass for finished
// without a manifest: a team whose run failed after its ranks published
// undoes it. Only by the holder of the place's claim, which kept every
// other run out (a prefix has none: one run per prefix).
void remove_split_outputs(store::WritableStore& place);

// After finish, the P part records are no longer needed: a split written by
// a team (mpirun) leaves the place a one-process split leaves.
void remove_part_records(store::WritableStore& place, std::uint64_t count);

}  // namespace mb::io::split
