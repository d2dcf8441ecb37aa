#pragma once
// How bytes may move: the knobs the transfer dispatcher is given, rather
// than reading the environment itself. No HDF5 here (cli/ sets it).
#include <cstddef>
#include <cstdint>

#include "io/run/progress.hpp"

namespace mb::io::transfer {

inline constexpr std::size_t kDefaultBufferBytes = 64u << 20;

// Unfiltered data up to this size is handled whole in memory: split reads
// such a dataset once for all its microbatches, merge assembles such a result
// before writing it once. Tens of thousands of small datasets then cost few
// library calls each; larger data is copied piece by piece.
inline constexpr std::uint64_t kWholeInMemory = 1u << 20;

// Datasets from this many bytes are allocated early and copied as file
// bytes; smaller ones are cheaper through HDF5's own small-data path.
inline constexpr std::uint64_t kFileBytesMin = 64u << 10;

// A run of bytes a copy has written into a file (the kernel's copy, or its
// stand-in through a buffer): [to_offset, to_offset + done) of `to`, of
// which the first `before` were told already. The descriptor is valid
// during the call only.
struct CopiedRun {
  int to = -1;
  std::uint64_t to_offset = 0;
  std::uint64_t before = 0, done = 0;
};

// Told of each step of a copy as it lands: a split hashes the blocks a step
// completes while the copy goes on, from the page cache the copy has just
// filled, instead of reading each file again once it is closed
// (io/publish/digest.hpp).
class CopyTap {
 public:
  virtual ~CopyTap() = default;
  virtual void copied(const CopiedRun& run) = 0;
};

struct Policy {
  // Bytes moved per read/write through our memory; bounds memory use.
  std::size_t buffer_bytes = kDefaultBufferBytes;
  // Contiguous data as file bytes, aligned chunks as stored bytes, and
  // contiguous variable-length strings read from their heap (strings.hpp);
  // off, everything goes through HDF5 hyperslabs (the tests compare both).
  bool byte_paths = true;
  // Split: files of the same shapes written as copies of one written through
  // libhdf5 (io/split/clone.hpp); off, every file through libhdf5 (the tests
  // compare both).
  bool clones = true;
  // Counts the bytes moved for the progress display; none: not counted.
  run::ByteMeter* meter = nullptr;
  // Told of the runs of bytes copied as file bytes; none: not told.
  CopyTap* tap = nullptr;
};

}  // namespace mb::io::transfer
