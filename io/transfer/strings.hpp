#pragma once
// Variable-length strings read from their global heap without libhdf5's
// per-string conversion. libhdf5 reads each string with a metadata-cache
// lookup of its heap collection and one allocation (and H5Dvlen_reclaim
// frees them all again): for short strings that is most of a split or merge.
// A contiguous dataset's stored elements are (length, collection, index)
// triples (core/global_heap.hpp); this reads them and the collections with
// pread, copies each string into one arena, and hands libhdf5 the char*
// array it would have made itself, for H5Dwrite. The same pointers, null
// where libhdf5 gives null, so what is written is what the libhdf5 path
// writes.
//
// Only where every detail is known: a contiguous, allocated dataset of a
// variable-length string type, in a file opened read-only with the POSIX
// driver and no user block, of 2-, 4- or 8-byte addresses and lengths,
// whose storage is one element record per element. A block whose elements
// or collections do not parse exactly (a damaged heap) is read through
// libhdf5 instead, which then behaves as it always has (io/guard.hpp).
#include "core/selection.hpp"
#include "io/h5/handle.hpp"
#include "io/transfer/policy.hpp"

namespace mb::transfer {

// Copies `from` of `src` to `to` of `dst` block by block, each block read
// on a thread that never calls libhdf5 while the one before is written
// (memory: half the policy's buffer_bytes per block in flight, records,
// pointers and strings, plus at most 4 MiB of heap collections), when `src`
// qualifies and the policy allows byte paths. Returns false, having done
// nothing, otherwise.
bool copy_heap_strings(hid_t src, const h5::Location& src_where, const Selection& from, hid_t dst,
                       const h5::Location& dst_where, const Selection& to, const Policy& policy);

}  // namespace mb::transfer
