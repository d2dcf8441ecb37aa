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
std::string filter_name(H5Z_filter_t id, const char* reported) {
  static const std::pair<H5Z_filter_t, const char*> known[] = {
      {H5Z_FILTER_DEFLATE, "gzip"}, {H5Z_FILTER_SHUFFLE, "shuffle"}, {H5Z_FILTER_FLETCHER32, "fletcher32"},
      {H5Z_FILTER_SZIP, "szip"},    {H5Z_FILTER_NBIT, "nbit"},       {H5Z_FILTER_SCALEOFFSET, "scaleoffset"},
      {307, "bzip2"},               {32000, "lzf"},                  {32001, "blosc"},
      {32004, "lz4"},               {32008, "bitshuffle"},           {32015, "zstd"}};
  for (const auto& [known_id, name] : known)
    if (known_id == id) return id < 256 ? name : fmt::format("{} (id {})", name, id);
  std::string name = *reported ? reported : "filter";
  if (auto cut = name.find(';'); cut != std::string::npos) name.resize(cut);
  return fmt::format("{} (id {})", name, id);
}

// The filter's display name (filter_name) and, in `info`, its id, short
// name and parameters.
std::string filter_text(hid_t dcpl, unsigned index, const h5::Location& where, FilterInfo& info) {
  unsigned flags = 0, config = 0;
  size_t n_values = 0;
  char reported[256] = {};
  H5Z_filter_t id = H5Pget_filter2(dcpl, index, &flags, &n_values, nullptr, sizeof reported, reported, &config);
  if (id < 0) fail(where, "cannot read the dataset's filters");
  info.cd_values.resize(n_values);
  id = H5Pget_filter2(dcpl, index, &flags, &n_values, info.cd_values.data(), sizeof reported, reported, &config);
  if (id < 0) fail(where, "cannot read the dataset's filters");
  const std::string name = filter_name(id, reported);
  info.id = id;
  info.name = name.substr(0, name.find(" (id "));
  info.optional = (flags & H5Z_FLAG_OPTIONAL) != 0;
  if (H5Zfilter_avail(id) <= 0) {
    H5Eclear2(H5E_DEFAULT);
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
      std::vector<hsize_t> chunks(space.dims.size());
      h5::check(H5Pget_chunk(dcpl.get(), static_cast<int>(chunks.size()), chunks.data()), where,
            "cannot read the chunk shape");
      info.chunks.assign(chunks.begin(), chunks.end());
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
