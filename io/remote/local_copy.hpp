#pragma once
// A remote file's bytes kept on the local disk, for servers that answer a
// Range request with the whole file (HTTP 200): python3 -m http.server,
// some CDNs. The body they send is written here as it arrives (memory stays
// bounded; the disk bounds the size) and every read is served from it.
//
// The file is unnamed (O_TMPFILE in $TMPDIR, else /tmp: remote::Settings): nothing is left on
// the disk however the run ends, and split -j's workers read it through the
// descriptor they inherit.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/h5/handle.hpp"
#include "io/run/fd.hpp"

namespace mb::io::remote {

class LocalCopy {
 public:
  // An empty copy of `shown` (which names it in messages), in `directory`.
  LocalCopy(std::string shown, std::string directory);
  LocalCopy(const LocalCopy&) = delete;
  LocalCopy& operator=(const LocalCopy&) = delete;

  // Adds bytes at the end; a full disk is an mb::Error that a retry may cure.
  void append(const char* bytes, std::size_t n);
  // Reads exactly [offset, offset + n), which must lie within size().
  void read(std::uint64_t offset, std::uint64_t n, char* out) const;
  // The directory it is kept in, for messages.
  const std::string& directory() const { return directory_; }

 private:
  std::string shown_, directory_;
  h5::Location where_;  // what write errors name: the URL and its copy
  run::Fd fd_;
  std::uint64_t size_ = 0;
};

}  // namespace mb::io::remote
