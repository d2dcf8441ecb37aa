#pragma once
// Reading what a file holds: its tree (checking on the way everything
// microbatch must refuse before writing a byte: unsupported link kinds and
// datatypes, unavailable filters) and attribute values for display. The
// values of offsets datasets: io/tree/offsets.hpp.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/resolve.hpp"
#include "core/tree.hpp"
#include "io/h5/handle.hpp"
#include "io/h5/space.hpp"

#include <nlohmann/json.hpp>

namespace mb::io::tree {

// What a walk of the tree may keep of each dataset while it is open (split
// then need not open it again: io/tree/held.hpp). Told of each dataset,
// then of each of its attributes, in name order; `discard` when one of them
// is a reference (rebuilt or refused, never copied).
class Keeper {
 public:
  virtual ~Keeper() = default;
  virtual void dataset(hid_t dataset, hid_t type, hid_t dcpl, const h5::SpaceInfo& space, const h5::Location& where) = 0;
  virtual void attribute(hid_t attr, hid_t type, hid_t space, const h5::SpaceInfo& shape, const std::string& name,
                         const h5::Location& at) = 0;
  virtual void discard() = 0;
};

// Refuses, besides what cannot be handled, datasets that cannot be read
// exactly (virtual datasets whose sources HDF5 would fill in).
NodeInfo read_tree(hid_t file, const std::string& file_name, Keeper* keeper = nullptr);
// The same tree for display: such datasets are kept, with the reason in
// their storage's `unreadable`.
NodeInfo describe_tree(hid_t file, const std::string& file_name, Keeper* keeper = nullptr);

// The names of a group's members in name order, refusing soft and external
// links (as read_tree does).
std::vector<std::string> member_names(hid_t group, const h5::Location& where);

// A short text of an attribute's value ("1200", "'tiny-llm'", "[1, 2, …]").
std::string attribute_preview(hid_t file, const std::string& file_name, const std::string& object_path,
                              const std::string& name);

// An attribute's value as JSON (specs::values_json); null for a null dataspace.
nlohmann::ordered_json attribute_json(hid_t file, const std::string& file_name, const std::string& object_path,
                                      const std::string& name);

}  // namespace mb::io::tree
