#pragma once
// A copy of rows along one axis between two datasets that agree on every
// other axis: what the byte paths (file_bytes, chunks) can take.
#include <cstdint>
#include <optional>

#include "io/h5/space.hpp"
#include "io/transfer/policy.hpp"

namespace mb::io::transfer {

struct RowCopy {
  hid_t src;
  const h5::Location& src_where;
  h5::SpaceInfo src_space;
  std::uint64_t src_begin;
  hid_t dst;
  const h5::Location& dst_where;
  h5::SpaceInfo dst_space;
  std::uint64_t dst_begin;
  std::uint64_t count;  // rows
  std::size_t axis;
};

// The same copy, `skipped` rows further on (for what a byte path leaves).
RowCopy advanced(const RowCopy& copy, std::uint64_t skipped);

}  // namespace mb::io::transfer
