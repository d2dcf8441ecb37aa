#pragma once
// Where a split or a merged file lives: a local directory, an S3 prefix, or
// an HTTP(S) location (read-only). One interface, opened once from the
// command line (open_store); split, shards, finish, verify, merge and teams
// take a Store and never ask which kind it is. What the tool promises of a
// place (outputs that are inputs refused, commits undone when their answer
// is lost, strays refused, leftovers recognised) is written once, above
// this interface (io/publish/place.hpp), so it holds on every kind.
//
// Members are named relative to the place ("microbatch-00000.h5",
// "manifest.json"); only direct members count (no subdirectories, no keys
// below a deeper "/").
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/settings.hpp"
#include "core/source.hpp"

namespace mb::io::store {

// A member as a listing shows it.
struct Entry {
  std::string name;
  std::uint64_t size = 0;
  // False for what a directory may hold besides files (a subdirectory, a
  // symbolic link, a FIFO, a device): never read as a member, never replaced.
  bool regular = true;
};

// What a run holds of a place while it writes there, released when
// destroyed: a directory's lock (and the directories the claim created,
// removed again unless kept); nothing on a prefix, which has no lock.
class Claim {
 public:
  virtual ~Claim() = default;
  // The run is complete: what the claim created stays.
  virtual void keep() = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // The place, and one of its members, as messages name them (no query,
  // no credentials).
  virtual std::string shown() const = 0;
  virtual std::string shown(std::string_view name) const = 0;

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

  // Writes a small member whole, atomically: it appears complete or not at
  // all. A failure after the bytes left (an answer lost) may still leave it:
  // the caller undoes it (io/publish/place.hpp's commit).
  virtual void put_text(std::string_view name, const std::string& text) = 0;
  // Removes a member; one that is not there is no error.
  virtual void remove(std::string_view name) = 0;
  // Claims the place for one run: a directory is created if missing and
  // locked by the lock file `lock_name`; a second run that finds the lock
  // held fails at once (a retry may help). A prefix has no lock.
  [[nodiscard]] virtual std::unique_ptr<Claim> claim(std::string_view lock_name) = 0;

  // Whether `source` is member `name` of this place: the same file (device
  // and inode), or the same object (address).
  virtual bool holds(const Source& source, std::string_view name) const = 0;
};

// Opens the place `where` names: s3://BUCKET/PREFIX[/] an S3 prefix,
// http(s)://HOST/PATH[/] a read-only location, anything else a local
// directory (which need not exist yet). Throws mb::Error (a usage error) for
// a malformed name or half-given credentials, before any request.
std::unique_ptr<Store> open_store(const std::string& where, const Settings& settings);

// The place holding the file `path` names, and the file's name in it:
// s3://B/P/x.h5 -> (s3://B/P/, x.h5); out/x.h5 -> (out, x.h5).
struct Member {
  std::unique_ptr<Store> store;
  std::string name;
};
Member open_member(const std::string& path, const Settings& settings);

}  // namespace mb::io::store
