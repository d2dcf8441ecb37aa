#include "io/tree/storage.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "io/h5/dataset.hpp"

namespace mb::io::tree {
namespace {

// Short names for the filters of HDF5's registry that ML data tends to use;
// plugins report long descriptions ("HDF5 lz4 filter; see http://...").
std::string filter_name(H5Z_filter_t id, const std::string& reported) {
  static const std::pair<H5Z_filter_t, const char*> known[] = {
      {H5Z_FILTER_DEFLATE, "gzip"}, {H5Z_FILTER_SHUFFLE, "shuffle"}, {H5Z_FILTER_FLETCHER32, "fletcher32"},
      {H5Z_FILTER_SZIP, "szip"},    {H5Z_FILTER_NBIT, "nbit"},       {H5Z_FILTER_SCALEOFFSET, "scaleoffset"},
      {307, "bzip2"},               {32000, "lzf"},                  {32001, "blosc"},
      {32004, "lz4"},               {32008, "bitshuffle"},           {32015, "zstd"}};
  for (const auto& [known_id, name] : known)
    if (known_id == id) return id < 256 ? name : fmt::format("{} (id {})", name, id);
  std::string name = reported.empty() ? "filter" : reported;
  if (auto cut = name.find(';'); cut != std::string::npos) name.resize(cut);
  return fmt::format("{} (id {})", name, id);
}

// The filter's display name (filter_name) and, in `info`, its id, short
// name and parameters.
std::string filter_text(hid_t dcpl, unsigned index, const h5::Location& where, FilterInfo& info) {
  h5::Filter filter = h5::filter_at(dcpl, index, where);
  const std::string name = filter_name(filter.id, filter.reported);
  info.id = filter.id;
  info.cd_values = std::move(filter.values);
  info.name = name.substr(0, name.find(" (id "));
  info.optional = (filter.flags & H5Z_FLAG_OPTIONAL) != 0;
  if (!h5::filter_available(filter.id)) {
    throw Error(where.describe() + ": filter " + name +
                " is not available to the HDF5 library (install its plugin, e.g. Debian's hdf5-filter-plugin, or "
                "set HDF5_PLUGIN_PATH)");
  }
  return name;
}

}  // namespace

StorageInfo read_storage(const h5::Id& dcpl, const h5::SpaceInfo& space, const h5::Location& where) {
  StorageInfo info;
  info.max_shape = space.max_dims;
  switch (h5::layout_of(dcpl.get(), where)) {
    case H5D_COMPACT: info.layout = "compact"; break;
    case H5D_CONTIGUOUS: info.layout = "contiguous"; break;
    case H5D_VIRTUAL: info.layout = "virtual"; break;
    case H5D_CHUNKED: {
      info.layout = "chunked";
      info.chunks = h5::chunk_shape(dcpl.get(), where);
      break;
    }
    default: fail(where, "cannot read the dataset's layout");
  }
  const int n = h5::filter_count(dcpl.get(), where);
  for (int i = 0; i < n; ++i) {
    info.filters.push_back(filter_text(dcpl.get(), static_cast<unsigned>(i), where, info.filter_params.emplace_back()));
  }
  return info;
}

}  // namespace mb::io::tree
