#include "io/transfer/string_storage.hpp"

#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/h5/object.hpp"
#include "io/h5/space.hpp"
#include "io/h5/types.hpp"

namespace mb::io::transfer {
namespace {

// The file's side: opened with `intent` (a read-only input has nothing
// unflushed; an output is ours), POSIX driver, no user block (heap
// addresses are then file offsets), sizes the decoder knows.
std::optional<Records> file_side(hid_t file, unsigned intent, const h5::Location& where) {
  if (h5::intent_of(file, where) != intent) return std::nullopt;
  const h5::Addressing addressing = h5::addressing_of(file, where);
  Records r;
  r.sizes = {static_cast<unsigned>(addressing.address), static_cast<unsigned>(addressing.length)};
  if (addressing.userblock != 0 || !r.sizes.supported()) return std::nullopt;
  const std::optional<int> fd = h5::descriptor_of(file, where);
  if (!fd) return std::nullopt;
  r.fd = *fd;
  return r;
}

// A dataset of variable-length strings, with its creation properties and
// its file, which qualifies when that file is opened with `intent`.
struct Candidate {
  hid_t dataset;
  hid_t dcpl;
  hid_t file;
  unsigned intent;
};

// Contiguous and allocated, with exactly one element record per element.
std::optional<Records> records_of(const Candidate& c, const h5::Location& where) {
  if (h5::filter_count(c.dcpl, where) != 0) return std::nullopt;
  // None also for one never written (an input: libhdf5 gives the fill
  // value), or not allocated yet.
  const std::optional<h5::Placement> placed = h5::placement(c.dataset, c.dcpl, where);
  if (!placed) return std::nullopt;
  auto r = file_side(c.file, c.intent, where);
  if (!r) return std::nullopt;
  r->offset = placed->address;
  const h5::SpaceInfo space = h5::dataset_space(c.dataset, where);
  r->dims = space.dims;
  if (space.null_space || placed->bytes != space.elements() * r->sizes.element()) return std::nullopt;
  return r;
}

}  // namespace

std::optional<Records> source_of(hid_t dataset, hid_t type, const h5::Location& where) {
  if (!h5::is_variable_string(type, where)) return std::nullopt;
  const h5::Id dcpl = h5::creation_of(dataset, where);
  const h5::Id file = h5::file_of(dataset, where);
  return records_of({dataset, dcpl.get(), file.get(), H5F_ACC_RDONLY}, where);
}

std::optional<Target> target_of(hid_t dataset, hid_t type, const h5::Location& where) {
  if (!h5::same_type(h5::type_of(dataset, where).get(), type, where) || !h5::is_variable_string(type, where))
    return std::nullopt;
  const h5::Id dcpl = h5::creation_of(dataset, where);
  if (h5::user_fill_value(dcpl.get(), where)) return std::nullopt;
  Target t{{}, h5::file_of(dataset, where)};
  auto r = records_of({dataset, dcpl.get(), t.file.get(), H5F_ACC_RDWR}, where);
  if (!r || r->sizes.address != 8 || r->sizes.length != 8) return std::nullopt;
  t.records = *r;
  return t;
}

std::uint64_t reserve(const Target& target, std::uint64_t bytes, const h5::Location& where) {
  h5::increment_filesize(target.file.get(), bytes, where);
  return h5::end_of_allocation(target.file.get(), where) - bytes;
}

std::optional<std::uint64_t> run_start(const Selection& s, const Shape& dims) {
  std::size_t k = 0;
  while (k < s.count.size() && s.count[k] == 1) ++k;
  for (std::size_t d = k; d < s.count.size(); ++d) {
    const bool unit = s.stride.empty() || s.stride[d] == 1;
    if (!unit) return std::nullopt;
    if (d > k && (s.start[d] != 0 || s.count[d] != dims[d])) return std::nullopt;
  }
  return flat_index(dims, s.start);
}

}  // namespace mb::io::transfer
