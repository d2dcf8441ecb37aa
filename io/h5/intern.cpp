#include "io/h5/intern.hpp"

#include <algorithm>
#include <utility>

namespace mb::io::h5 {
namespace {

// A chunk shape and its options (H5Pset_chunk_opts); false if unreadable.
using Chunking = std::pair<std::vector<hsize_t>, unsigned>;
bool chunking(hid_t dcpl, Chunking& out) {
  out.first.assign(H5S_MAX_RANK, 0);
  const int rank = H5Pget_chunk(dcpl, H5S_MAX_RANK, out.first.data());
  if (rank < 0 || H5Pget_chunk_opts(dcpl, &out.second) < 0) return false;
  out.first.resize(static_cast<std::size_t>(rank));
  return true;
}

}  // namespace

htri_t equal_types(hid_t a, hid_t b) { return H5Tequal(a, b); }

htri_t equal_lists(hid_t a, hid_t b) {
  const htri_t equal = H5Pequal(a, b);
  if (equal <= 0 || H5Pget_layout(a) != H5D_CHUNKED) return equal;  // equal lists: the same layout
  Chunking x, y;
  if (!chunking(a, x) || !chunking(b, y)) return -1;
  return x == y ? 1 : 0;
}

htri_t equal_extents(hid_t a, hid_t b) { return H5Sextent_equal(a, b); }

Interned::Found Interned::find(hid_t id) const {
  for (std::size_t i = 0; i < std::min(kept_.size(), searched_); ++i) {
    const htri_t same = equal_(kept_[i].get(), id);
    if (same < 0) {
      forget_error();
      return {H5I_INVALID_HID, true};
    }
    if (same > 0) return {kept_[i].get(), false};
  }
  return {};
}

hid_t Interned::add(Id id) {
  kept_.push_back(std::move(id));
  return kept_.back().get();
}

}  // namespace mb::io::h5
