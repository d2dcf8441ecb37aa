#pragma once
// An HDF5 file driver (virtual file layer) that reads a remote file by
// byte ranges through remote::Object, for inputs named by URL.
//
// Why not libhdf5's own read-only S3 driver (ROS3): in 1.10.8 it sets no
// timeout (a stalled server hangs the run forever), cannot send a session
// token, reports every failure as "curl cannot perform request" (no HTTP
// status, no URL), and makes one request per library read: opening a file
// alone costs dozens of requests of a few bytes each. This driver keeps
// what the library reads in blocks (a process-wide, bounded cache), so the
// many small metadata reads of a file cost a few block requests, and reads
// of a block or more go straight to one request each.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "core/remote.hpp"
#include "io/h5/handle.hpp"
#include "io/remote/http.hpp"

namespace mb::io::remote {

// File access properties that open `address.name` through the driver,
// which requests `address` (it must outlive the open).
h5::Id file_access(const RemoteAddress& address);

// The version of the remote object that this process reads (fetching its
// first block, which opening it then takes from the cache).
Version describe(const RemoteAddress& address);

// Reads the remote object whole, in order, a window at a time (for
// digests); returns its size. A small file stays in the block cache for
// the reads that follow.
std::uint64_t read_all(const RemoteAddress& address, const std::function<void(const char*, std::size_t)>& consume);

}  // namespace mb::io::remote
