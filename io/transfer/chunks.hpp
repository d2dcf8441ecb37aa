#pragma once
// Chunked datasets moved as stored chunks. Where both datasets are chunked
// alike with the same filters, and the rows start on chunk boundaries in
// both, every chunk whole inside the copy moves as its stored bytes
// (H5Dread_chunk / H5Dwrite_chunk): compressed data is not decompressed and
// recompressed. Variable-length data never moves this way: its stored
// bytes are addresses in its own file's heap.
#include "io/transfer/rows.hpp"

namespace mb::io::transfer {

// Copies the leading whole chunks of the rows as stored bytes (a partial
// last chunk too when it ends both datasets' extents: it is an edge chunk in
// both, stored at full size). Returns how many rows it covered; the caller
// copies the rest. 0 when nothing qualifies.
std::uint64_t copy_raw_chunks(const RowCopy& copy, const Policy& policy);

}  // namespace mb::io::transfer
