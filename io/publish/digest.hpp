#pragma once
// Content digests of files (XXH3-128, from Debian's libxxhash): the
// manifest records one per microbatch file, and merge checks them, so that
// a file changed or replaced after the split is refused.
#include <cstdint>
#include <string>
#include <vector>

#include "core/source.hpp"

namespace mb::io::publish {

struct FileDigest {
  std::uint64_t size = 0;
  std::string digest;  // 32 hex digits
};

// Digests of `files`, hashed by up to `threads` threads; a file that cannot
// be read is an error naming it as shown (a temporary by its final name).
std::vector<FileDigest> digest_files(const std::vector<Source>& files, unsigned threads);

// The size of a file, local or remote (one small request).
std::uint64_t size_of(const Source& file);

// Digest of a text (the split id is the digest of what defines a split).
std::string digest_text(const std::string& text);

}  // namespace mb::io::publish
