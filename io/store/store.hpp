#pragma once
// Where a split or a merged file lives: a local directory, an S3 prefix, or
// an HTTP(S) location (read-only). One interface, opened once from the
// command line (open_store); split, shards, finish, verify, merge and teams
// take a Store and never ask which kind it is. What the tool promises of a
// place (outputs that are inputs refused, commits undone when their answer
// is lost, strays refused, leftovers recognised) is written once, above
// this interface (io/store/place.hpp), so it holds on every kind.
//
// Members are named relative to the place ("microbatch-00000.h5",
// "manifest.json"); only direct members count (no subdirectories, no keys
// below a deeper "/").
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/settings.hpp"
#include "core/shards.hpp"
#include "core/source.hpp"

namespace mb::io::store {

// A member as a listing shows it.
struct Entry {
  std::string name;
  std::uint64_t size = 0;
  // False for what a directory may hold besides files (a subdirectory, a
  // symbolic link, a FIFO, a device): never read as a member, never replaced.
  bool regular = true;
  // When it was last written, as the place tells it (UTC, to the second);
  // empty when unknown. For messages only.
  std::string modified;
};

// What a run holds of a place while it writes there, released when
// destroyed: a directory's lock (and the directories the claim created,
// removed again unless kept); nothing on a prefix, which has no lock.
class Claim {
 public:
  virtual ~Claim() = default;
  // The run is complete: what the claim created stays.
  virtual void keep() = 0;
  // How many temporaries of killed runs the claim removed (their lost work).
  virtual std::size_t removed_temporaries() const { return 0; }
};

class WritableStore;

// A place claimed for a run, and the names of an earlier run's files left
// there until the run commits (a place whose writes replace keeps them
// rather than pay a request per file to remove them first).
struct Claimed {
  std::unique_ptr<Claim> claim;
  std::vector<std::string> earlier;
};

// What a run holds before its publication opens, claimed by the caller
// (io/split: a whole split's claim, a shard's, a resumed run's, a team
// rank's lock): the place, and the local directory that keeps a copy of
// what it publishes there (WritableStore::local_copy), opened and claimed
// alike. Without one, a publication that needs a spool makes its own.
struct Claims {
  Claimed place;
  std::unique_ptr<WritableStore> copy;
  Claimed copy_claimed;
};

// What a run publishes on a place: files written locally, then published
// together, and the object that commits them (a manifest, a shard's part
// record), published last: nothing passes for finished before it.
struct PublicationPlan {
  std::vector<std::string> names;  // every file of the split, by index
  FileRange mine;                  // the files this run writes
  std::string last;                // the commit object's name
  // The run is the place's only writer (a whole split, not a shard beside
  // its neighbours): a split output it did not write that appears in its
  // directory meanwhile fails it.
  bool alone = true;
  std::uint64_t workers = 1;  // processes writing files at once
  std::function<void(std::uint64_t bytes)> uploaded;  // bytes of files up so far
  // split --resume: each file is published as soon as it is complete, after
  // its journal entry (specs/journal.hpp), whose text this gives; what is
  // published stays when the run fails, for a rerun to keep. Empty: the
  // files are published together by commit().
  std::function<std::string(std::uint64_t index)> journal;
};

// A run's files on their way to a place, opened by Store::publication: each
// written where path() says, handed on round by round, and all published
// by commit(), the commit object last. Destroyed without commit(), it
// leaves nothing under a final name (what it could not remove, abandon()
// tells).
class Publication {
 public:
  virtual ~Publication() = default;

  // Where file `index` (one of the run's) is written, and the local path
  // messages name it by while it is written.
  virtual std::string path(std::uint64_t index) const = 0;
  virtual std::string local_name(std::uint64_t index) const = 0;
  // The rounds the run's files are written in, in order: as many at once
  // as the place's pipeline holds.
  virtual std::vector<FileRange> rounds() const = 0;
  // Waits until the files handed on leave room for another round (an
  // upload's back-pressure; a directory has nothing to wait for).
  virtual void make_room() = 0;
  // Files `done` are written and closed (but those that stand, and those
  // handed on already).
  virtual void complete(FileRange done) = 0;
  // File `index` stands under its final name already, with its journal
  // entry: an earlier run's, kept by split --resume. It is neither written
  // nor published, and never removed.
  virtual void stands(std::uint64_t index) = 0;
  // Publishes every file of the run, then `last_text` as the commit object.
  virtual void commit(const std::string& last_text) = 0;
  // Ends without a commit, removing what the run wrote: "" or what to add
  // to the run's error (what could not be removed).
  virtual std::string abandon() = 0;
};

// One file published whole under one name (a merged batch), opened by
// Store::file_publication: written where path() says, then made to appear
// whole by publish(). Destroyed before keep(), it leaves nothing it wrote
// under the name on a directory (a published object stays: the run was
// complete).
class FilePublication {
 public:
  virtual ~FilePublication() = default;

  // Where the run writes the file (nothing is there yet).
  virtual std::string path() const = 0;
  // Publishes the written file, telling `uploaded` (if any) the bytes the
  // place confirmed so far; returns its size. Without --force nothing may
  // stand under the name by then; with it, what stands there must be what
  // stood when this was opened.
  virtual std::uint64_t publish(const std::function<void(std::uint64_t uploaded)>& uploaded) = 0;
  // The run is complete: what was published stays.
  virtual void keep() = 0;
};

// A place as every kind has it: read.
class Store {
 public:
  virtual ~Store() = default;

  // The place, and one of its members, as messages name them (no query,
  // no credentials).
  virtual std::string shown() const = 0;
  virtual std::string shown(std::string_view name) const = 0;

  // Whether the place is there: a directory that exists; a prefix or an
  // HTTP(S) location always is (an empty one has no members).
  virtual bool exists() const { return true; }
  // Its direct members, by name, with their sizes, in name order. A member
  // that vanishes while listed is left out. Throws where a place cannot be
  // listed (an HTTP(S) location).
  virtual std::vector<Entry> list() const = 0;
  // A member's size, or none when it is not there.
  virtual std::optional<std::uint64_t> size(std::string_view name) const = 0;
  // A member as an input: how it is opened, read by ranges and digested.
  virtual Source source(std::string_view name) const = 0;
  // A small member whole (a manifest, a part record), or none when it is
  // not there.
  virtual std::optional<std::string> read_text(std::string_view name) const = 0;

  // Whether `source` is member `name` of this place: the same file (device
  // and inode), or the same object (address).
  virtual bool holds(const Source& source, std::string_view name) const = 0;
};

// A place a run writes to: a local directory or an S3 prefix (an HTTP(S)
// location is read-only, and has none of this).
class WritableStore : public Store {
 public:
  // Writes a small member whole, atomically: it appears complete or not at
  // all. A failure after the bytes left (an answer lost) may still leave it:
  // the caller undoes it (io/store/place.hpp's commit). Of two runs
  // committing one name, one wins: a directory's claim (its lock) keeps
  // them apart; on a prefix, the put is conditional (If-None-Match: *) and
  // the loser gets remote::Exists, an error the caller must not undo.
  virtual void put_text(std::string_view name, const std::string& text) = 0;
  // Removes a member; one that is not there is no error.
  virtual void remove(std::string_view name) = 0;
  // The same, but the bytes may go later: a directory renames the member
  // to a hidden name at once and removes it in a process of its own
  // (publish::Discards), done before the Store is destroyed.
  virtual void set_aside(std::string_view name) { remove(name); }
  // Claims the place for one run: a directory is created if missing and
  // locked by the lock file `lock_name`; a second run that finds the lock
  // held fails at once (a retry may help). A prefix has no lock.
  [[nodiscard]] virtual std::unique_ptr<Claim> claim(std::string_view lock_name) = 0;

  // Whether a write over a member replaces it at once (an object store):
  // an earlier split's files are then best left to be overwritten, and
  // those not overwritten removed after the commit (Claimed::earlier),
  // rather than removed first at a request each.
  virtual bool overwrites() const { return false; }
  // A local directory that also receives what a run publishes here
  // (--keep-local on a prefix), claimed by the caller as a place of its own.
  virtual std::optional<std::string> local_copy() const { return std::nullopt; }

  // Opens the publication of a run's files, on what the run claimed: in a
  // directory, temporaries beside the finals, renamed at the commit; onto a
  // prefix, a local spool (or the local copy) uploaded round by round while
  // the next is written.
  [[nodiscard]] virtual std::unique_ptr<Publication> publication(const PublicationPlan& plan, Claims claims) = 0;

  // Opens the publication of one file as member `name`, checked before any
  // work: a member already there is refused unless `force`. In a
  // directory, a temporary beside it renamed into place (under the lock
  // ".NAME.lock", what killed runs left removed); onto a prefix, a local
  // spool uploaded whole (multipart from 16 MiB).
  [[nodiscard]] virtual std::unique_ptr<FilePublication> file_publication(std::string_view name, bool force) = 0;
};

// Opens the place `where` names: s3://BUCKET/PREFIX[/] an S3 prefix,
// http(s)://HOST/PATH[/] a read-only location, anything else a local
// directory (which need not exist yet). Throws mb::Error (a usage error) for
// a malformed name or half-given credentials, before any request.
std::unique_ptr<Store> open_store(const std::string& where, const Settings& settings);
// What only a place of objects has: where a run's files wait for their
// upload, and how many go up at once. A directory has no use for them.
struct WriteOptions {
  // The directory the files (and the commit object) are written to and kept
  // in (--keep-local), else a spool under $TMPDIR removed as they go up.
  std::optional<std::string> keep_local;
  unsigned uploads = 4;
};

// The same for a place the run writes to: a directory or an S3 prefix; an
// HTTP(S) location is a usage error.
std::unique_ptr<WritableStore> open_writable(const std::string& where, const Settings& settings,
                                             const WriteOptions& options = {});

// The place holding the file `path` names, and the file's name in it:
// s3://B/P/x.h5 -> (s3://B/P/, x.h5); out/x.h5 -> (out, x.h5).
struct Member {
  std::unique_ptr<Store> store;
  std::string name;
};
Member open_member(const std::string& path, const Settings& settings);
// The same for a file the run writes (merge's output).
struct WritableMember {
  std::unique_ptr<WritableStore> store;
  std::string name;
};
WritableMember open_writable_member(const std::string& path, const Settings& settings);

// The split `argument` names as a whole, and its manifest's name there: a
// local path that is a directory or nothing at all (a split that is not
// there), or a URL of a prefix ("…/") or of its manifest ("…/manifest.json");
// none for a file or any other object.
std::optional<Member> open_split(const Source& argument);

}  // namespace mb::io::store
