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

htri_t same_strings(hid_t a, hid_t b);

// Member `i` of compound `a` against the member of `b` of the same name
// (H5Tequal compares members sorted by name, not in their order).
htri_t same_member_strings(hid_t a, hid_t b, unsigned i) {
  char* name = H5Tget_member_name(a, i);
  if (name == nullptr) return -1;
  const int j = H5Tget_member_index(b, name);
  H5free_memory(name);
  if (j < 0) return -1;
  const Id x(H5Tget_member_type(a, i)), y(H5Tget_member_type(b, static_cast<unsigned>(j)));
  return x.valid() && y.valid() ? same_strings(x.get(), y.get()) : -1;
}

// Character set and padding of every string in two types that H5Tequal
// calls equal (so of the same shape): libhdf5 1.10 compares variable-length
// strings without them, so an ASCII and a UTF-8 `str` would share one
// interned id, and libhdf5 then cannot convert between the file's and it.
htri_t same_strings(hid_t a, hid_t b) {
  const H5T_class_t cls = H5Tget_class(a);
  if (cls == H5T_STRING) {
    const H5T_cset_t ca = H5Tget_cset(a), cb = H5Tget_cset(b);
    const H5T_str_t pa = H5Tget_strpad(a), pb = H5Tget_strpad(b);
    if (ca < 0 || cb < 0 || pa < 0 || pb < 0) return -1;
    return ca == cb && pa == pb ? 1 : 0;
  }
  if (cls == H5T_ARRAY || cls == H5T_VLEN) {
    const Id x(H5Tget_super(a)), y(H5Tget_super(b));
    return x.valid() && y.valid() ? same_strings(x.get(), y.get()) : -1;
  }
  if (cls != H5T_COMPOUND) return cls < 0 ? -1 : 1;
  const int members = H5Tget_nmembers(a);
  if (members < 0) return -1;
  for (unsigned i = 0; i < static_cast<unsigned>(members); ++i) {
    const htri_t same = same_member_strings(a, b, i);
    if (same <= 0) return same;
  }
  return 1;
}

}  // namespace

htri_t equal_types(hid_t a, hid_t b) {
  const htri_t equal = H5Tequal(a, b);
  if (equal <= 0 || H5Tdetect_class(a, H5T_STRING) == 0) return equal;
  return same_strings(a, b);
}

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
