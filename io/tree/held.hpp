#pragma once
// Small datasets kept from the walk of the tree (a Keeper): their
// prototype, attributes and data, so that split's writer need not open them
// again. Opening each input dataset once more and reading its description
// and attributes again was a fifth of a split of many small datasets.
//
// Their datatypes, creation properties and dataspaces are interned
// (io/h5/intern.hpp); the values are plain memory.
//
// Kept: a dataset whose data is at most 1 MiB, unfiltered, stored in its
// file (not virtual or external), of a type whose elements are their bytes
// and not committed, while the values kept stay within a byte budget. Its
// attributes whatever their type (variable-length values are held as
// libhdf5 read them), but none holding references. Anything else is left
// for the writer to open.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/h5/attributes.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/intern.hpp"
#include "io/tree/reader.hpp"

namespace mb::io::tree {

class Held : public Keeper {
 public:
  explicit Held(std::uint64_t budget) : budget_(budget) {}

  struct Dataset {
    h5::Prototype prototype;
    h5::Attributes attributes;
    h5::Buffer whole;  // every element, as the writer's read_whole reads it
  };
  // The kept dataset at `path`, or null.
  Dataset* find(const std::string& path);
  std::size_t size() const { return datasets_.size(); }

  void dataset(hid_t dataset, hid_t type, hid_t dcpl, const h5::SpaceInfo& space, const h5::Location& where) override;
  void attribute(hid_t attr, hid_t type, hid_t space, const h5::SpaceInfo& shape, const std::string& name,
                 const h5::Location& at) override;
  void discard() override;

 private:
  // Distinct ids per table at most: past them, datasets are not kept.
  static constexpr std::size_t kInterned = 32;
  // The interned id equal to `id` (a new one, shared, if none is and there
  // is room), or an invalid Id when the table is full.
  h5::Id interned(h5::Interned& table, hid_t id);

  std::uint64_t budget_;
  std::uint64_t used_ = 0;
  h5::Interned types_{h5::equal_types, kInterned};
  h5::Interned dcpls_{h5::equal_lists, kInterned};
  h5::Interned spaces_{h5::equal_extents, kInterned};
  std::unordered_map<std::string, Dataset> datasets_;
  Dataset* current_ = nullptr;  // the dataset whose attributes come next
  std::string current_path_;
};

}  // namespace mb::io::tree
