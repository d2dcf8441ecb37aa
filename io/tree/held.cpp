#include "io/tree/held.hpp"

#include <utility>
#include <vector>

#include "io/run/guard.hpp"
#include "io/h5/file.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/transfer/copy.hpp"

namespace mb::io::tree {

h5::Id Held::interned(h5::Interned& table, hid_t id) {
  const h5::Interned::Found found = table.find(id);
  if (found.failed) return {};
  if (found.id != H5I_INVALID_HID) return h5::share(found.id);
  if (table.size() >= kInterned) return {};
  h5::Id kept = h5::share(id);
  if (!kept.valid()) return {};
  return h5::share(table.add(std::move(kept)));
}

Held::Dataset* Held::find(const std::string& path) {
  const auto it = datasets_.find(path);
  return it == datasets_.end() ? nullptr : &it->second;
}

void Held::dataset(hid_t dataset, hid_t type, hid_t dcpl, const h5::SpaceInfo& space, const h5::Location& where) {
  current_ = nullptr;
  if (space.null_space || !h5::copyable_as_bytes(type) || h5::is_committed(type, where)) return;
  if (h5::layout_of(dcpl, where) == H5D_VIRTUAL || h5::external_count(dcpl, where) != 0) return;
  const std::uint64_t bytes = space.elements() * h5::size_of(type, where);
  if (!transfer::held_whole(dcpl, bytes, where) || used_ + bytes > budget_) return;
  h5::Id kept_type = interned(types_, type);
  h5::Id kept_dcpl = kept_type.valid() ? interned(dcpls_, dcpl) : h5::Id();
  if (!kept_dcpl.valid()) return;
  const hid_t buffer_type = kept_type.get();  // lives as long as the table
  Dataset held{h5::Prototype{std::move(kept_type), space, std::move(kept_dcpl)}, {}, h5::Buffer(buffer_type)};
  h5::read(dataset, Selection::all(space.dims), held.whole, where);
  used_ += bytes;
  current_ = &datasets_.emplace(where.path, std::move(held)).first->second;
  current_path_ = where.path;
}

void Held::attribute(hid_t attr, hid_t type, hid_t space, const h5::SpaceInfo& shape, const std::string& name,
                     const h5::Location& at) {
  if (current_ == nullptr) return;
  const std::uint64_t bytes = shape.elements() * h5::size_of(type, at);
  h5::Id kept_type = !h5::is_committed(type, at) && used_ + bytes <= budget_ ? interned(types_, type) : h5::Id();
  h5::Id kept_space = kept_type.valid() ? interned(spaces_, space) : h5::Id();
  if (!kept_space.valid()) {
    discard();
    return;
  }
  // As h5::read_attribute reads it.
  run::note_activity(at.file, at.path);
  h5::check_fits_in_file(attr, bytes, at);
  h5::AttributeValue value(std::move(kept_type));
  value.space = std::move(kept_space);
  value.shape = shape;
  value.data.prepare(shape.elements());
  if (!shape.null_space) h5::read_all(attr, value.type.get(), value.data.data(), at);
  used_ += bytes;
  current_->attributes.emplace_back(name, std::move(value));
}

void Held::discard() {
  if (current_ == nullptr) return;
  datasets_.erase(current_path_);
  current_ = nullptr;
}

}  // namespace mb::io::tree
