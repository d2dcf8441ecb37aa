#pragma once
// An input file as the kind of place that holds it serves it: the one room
// below the Store (io/store) that tells a file on this machine's disk from
// an object read through requests. What reads inputs (the tree, digests,
// merge's copies, a shard's record of its input, the watch on inputs) asks
// here and never which kind a Source is.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/source.hpp"
#include "io/h5/file.hpp"

namespace mb::io::source {

// Opened read-only as HDF5: a file through the checks of io/h5/file.hpp,
// an object through io/remote's driver, which requests the address the
// Source resolved.
h5::Id open(const Source& input, h5::Cache cache = h5::Cache::Evict);

// Its path on this machine's disk, which the kernel reads (stat, pread,
// copy_file_range); none for an object.
std::optional<std::string> local_path(const Source& input);

// What it is now: its size, when it was last written (nanoseconds since the
// epoch; an object's to the second) and an object's ETag (a file has none).
struct Version {
  std::uint64_t size = 0;
  std::int64_t modified_ns = 0;
  std::string etag;
};
Version version(const Source& input);

// Its size now (an object's from the request that opening it makes, whose
// first block a read then finds cached).
std::uint64_t size(const Source& input);

// An object's bytes, in order, to `sink`, read once; returns how many. (A
// file on disk is read by its local_path, as the kernel reads it.)
std::uint64_t read_all(const Source& input, const std::function<void(const char*, std::size_t)>& sink);

// Held to one version while the run reads it: a file is watched
// (io/run/identity.hpp: a change is refused before anything is published);
// an object is read under the ETag its first request saw (If-Match), which
// refuses one replaced meanwhile, so it needs no watch.
void watch(const Source& input);

}  // namespace mb::io::source
