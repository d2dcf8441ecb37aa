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
};

}  // namespace mb::io::transfer
