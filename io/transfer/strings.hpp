#pragma once
// Variable-length strings moved without libhdf5's per-string work. libhdf5
// reads each string with a metadata-cache lookup of its heap collection and
// one allocation (and H5Dvlen_reclaim frees them all again), and writes each
// with one insert into a collection of the metadata cache: for short
// strings that is most of a split or merge.
//
// Reading: a contiguous dataset's stored elements are (length, collection,
// index) triples (core/global_heap.hpp); this reads them and the
// collections with pread and copies each string into one arena: the char*
// array libhdf5 would have made itself, null where libhdf5 gives null. Only
// where every detail is known: a contiguous, allocated dataset of a
// variable-length string type, in a file opened read-only with the POSIX
// driver and no user block, of 2-, 4- or 8-byte addresses and lengths,
// whose storage is one element record per element. A block whose elements
// or collections do not parse exactly (a damaged heap) is read through
// libhdf5 instead, which then behaves as it always has (io/run/guard.hpp).
//
// Writing: to a contiguous output dataset allocated at creation (h5::
// make_extent allocates string datasets early) of the same type, without a
// fill value of its own, in a file of the POSIX driver: the strings are laid out in collections as libhdf5
// lays them out, written at the end of the file in space reserved from
// libhdf5 (H5Fincrement_filesize), and the element records written in
// place. A char* array either way, so what is written is what H5Dwrite of
// the same array writes: the same strings, nulls and empty strings. Any
// other output, a selection that is not one run of elements, or a few
// short strings (most of a collection would be free space) go to H5Dwrite.
#include "core/selection.hpp"
#include "io/h5/handle.hpp"
#include "io/transfer/policy.hpp"

namespace mb::io::transfer {

// Copies `from` of `src` to `to` of `dst` block by block, when `src` or
// `dst` qualifies and the policy allows byte paths: from a qualifying
// source each block is read on a thread that never calls libhdf5 while the
// one before is written. Memory: half the policy's buffer_bytes per block
// in flight (records, pointers and strings; packed collections as many),
// plus at most 4 MiB of the source's collections. Returns false, having
// done nothing, otherwise.
bool copy_heap_strings(hid_t src, const h5::Location& src_where, const Selection& from, hid_t dst,
                       const h5::Location& dst_where, const Selection& to, const Policy& policy);

}  // namespace mb::io::transfer
