#pragma once
// Interning: one kept id for every set of equal datatypes, creation property
// lists or dataspaces, shared by everything that has an equal one. libhdf5
// 1.10 keeps its ids in skip lists, and tens of thousands held open slow
// every call.
#include <hdf5.h>

#include <cstddef>
#include <vector>

#include "io/h5/handle.hpp"

namespace mb::io::h5 {

// Equalities that tell apart what libhdf5's own calls take for equal.
htri_t equal_types(hid_t a, hid_t b);       // H5Tequal, plus every string's character set and padding
htri_t equal_lists(hid_t a, hid_t b);       // H5Pequal, plus chunk shape and options (1.10.8 ignores them)
htri_t equal_extents(hid_t a, hid_t b);     // H5Sextent_equal

class Interned {
 public:
  using Equal = htri_t (*)(hid_t, hid_t);
  // Looks among the first `searched` kept ids (each lookup compares with
  // every one of them).
  Interned(Equal equal, std::size_t searched) : equal_(equal), searched_(searched) {}

  struct Found {
    hid_t id = H5I_INVALID_HID;  // the kept id equal to the one asked for; invalid if none
    bool failed = false;         // a comparison failed (its error is forgotten): equality unknown
  };
  Found find(hid_t id) const;
  // Keeps `id` (owned from now on) and returns it, valid as long as this table.
  hid_t add(Id id);
  std::size_t size() const { return kept_.size(); }

 private:
  Equal equal_;
  std::size_t searched_;
  std::vector<Id> kept_;
};

}  // namespace mb::io::h5
