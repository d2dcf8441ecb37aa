#include "io/h5/virtual.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/intern.hpp"
#include "io/h5/space.hpp"
#include "io/h5/types.hpp"

namespace mb::io::h5 {
namespace {

// Virtual sources that are virtual in turn: deeper than this is refused (a
// cycle would never end).
constexpr int kMaxNesting = 16;

// A source name as HDF5 reads it (H5D_virtual_parse_source_name): "%%" is
// one '%', "%b" a block number, any other '%' is invalid.
struct ParsedName {
  std::string literal;
  bool pattern = false;
  bool invalid = false;
};

ParsedName parse_source_name(const std::string& raw) {
  ParsedName out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '%') {
      out.literal += raw[i];
      continue;
    }
    const char next = i + 1 < raw.size() ? raw[i + 1] : '\0';
    if (next == '%') out.literal += '%';
    else if (next == 'b') out.pattern = true;
    else out.invalid = true;
    ++i;
  }
  return out;
}

std::string mapping_name(hid_t dcpl, std::size_t index, bool file, const Location& where) {
  const auto get = file ? H5Pget_virtual_filename : H5Pget_virtual_dsetname;
  const ssize_t n = get(dcpl, index, nullptr, 0);
  if (n < 0) fail(where, "cannot read a virtual mapping's source name");
  std::string name(static_cast<std::size_t>(n) + 1, '\0');
  if (get(dcpl, index, name.data(), name.size()) < 0) fail(where, "cannot read a virtual mapping's source name");
  name.resize(static_cast<std::size_t>(n));
  return name;
}

std::string joined(const std::string& prefix, const std::string& name) {
  return prefix.empty() || prefix.back() == '/' ? prefix + name : prefix + "/" + name;
}

// H5_build_extpath: the directory of the virtual file's name as it was
// opened, made absolute, with a trailing '/'.
std::string extpath_of(const std::string& opened) {
  const std::string full = opened.starts_with('/') ? opened : joined(std::filesystem::current_path().string(), opened);
  return full.substr(0, full.rfind('/') + 1);
}

// The directory of the virtual file's "actual name" (its name as opened,
// or where it leads when that is a symbolic link), if the name has one.
std::optional<std::string> actual_directory(const std::string& opened) {
  std::string actual = opened;
  struct stat st {};
  char resolved[PATH_MAX];
  if (::lstat(opened.c_str(), &st) == 0 && S_ISLNK(st.st_mode) && ::realpath(opened.c_str(), resolved))
    actual = resolved;
  const auto cut = actual.rfind('/');
  if (cut == std::string::npos) return std::nullopt;
  return actual.substr(0, cut);
}

// Where HDF5 1.10 looks for a source file, in order (H5F_prefix_open_file,
// with the dataset's prefix taken from HDF5_VDS_PREFIX as H5Dopen does when
// no access property sets one): the first of these that opens is read.
std::vector<std::string> candidates(const std::string& name, const std::string& opened) {
  std::vector<std::string> out;
  std::string base = name;
  if (name.starts_with('/')) {
    out.push_back(name);
    base = name.substr(name.rfind('/') + 1);
  }
  // The one variable io/ reads itself: libhdf5 reads it from the process's
  // environment when it opens the dataset, and this list must be the one
  // the library will try, not a copy taken earlier.
  const char* env = std::getenv("HDF5_VDS_PREFIX");
  const std::string prefixes = env ? env : "";
  for (std::size_t from = 0; from < prefixes.size();) {
    const std::size_t to = std::min(prefixes.find(':', from), prefixes.size());
    if (to > from) out.push_back(joined(prefixes.substr(from, to - from), base));
    from = to + 1;
  }
  if (!prefixes.empty() && prefixes != ".") {
    const std::string origin = "${ORIGIN}";
    out.push_back(joined(prefixes.starts_with(origin) ? extpath_of(opened) + prefixes.substr(origin.size()) : prefixes,
                         base));
  }
  out.push_back(joined(extpath_of(opened), base));
  out.push_back(base);
  if (const auto dir = actual_directory(opened)) out.push_back(joined(*dir, base));
  return out;
}

std::string file_name_of(hid_t object, const Location& where) {
  const ssize_t n = H5Fget_name(object, nullptr, 0);
  if (n < 0) fail(where, "cannot read the file's name");
  std::string name(static_cast<std::size_t>(n) + 1, '\0');
  if (H5Fget_name(object, name.data(), name.size()) < 0) fail(where, "cannot read the file's name");
  name.resize(static_cast<std::size_t>(n));
  return name;
}

// One source dataset, open, with what the mappings are checked against.
struct Source {
  std::string file;  // as found
  std::string dataset;
  Id file_id;
  Id dataset_id;
  SpaceInfo space;
};

struct Search {
  hid_t dataset;      // the virtual dataset
  Location where;     // names it
  int depth;
};

// Opens the first candidate HDF5 would open, with the virtual file's access
// properties (HDF5 uses a copy of them for its sources).
Source open_source_file(const Search& s, const std::string& name) {
  Source src;
  Id own(H5Iget_file_id(s.dataset), s.where, "cannot find the file of");
  const std::string opened = file_name_of(s.dataset, s.where);
  if (name == ".") {  // the virtual dataset's own file
    src.file = opened;
    src.file_id = std::move(own);
    return src;
  }
  Id fapl(H5Fget_access_plist(own.get()), s.where, "cannot read the file access properties");
  std::vector<std::string> tried;
  for (const auto& candidate : candidates(name, opened)) {
    if (std::find(tried.begin(), tried.end(), candidate) != tried.end()) continue;
    tried.push_back(candidate);
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0) continue;
    if (!S_ISREG(st.st_mode))  // HDF5 would block on a FIFO, or fail on anything else and look further
      throw Error(fmt::format("{}: the source file {} of this virtual dataset is found as {}, which is not a regular "
                              "file",
                              s.where.describe(), name, candidate));
    Id file(H5Fopen(candidate.c_str(), H5F_ACC_RDONLY, fapl.get()));
    if (!file.valid()) {
      forget_error();  // HDF5 too goes on to the next candidate
      continue;
    }
    src.file = candidate;
    src.file_id = std::move(file);
    return src;
  }
  throw Error(fmt::format("{}: the source file {} of this virtual dataset is missing (looked for {}); HDF5 would read "
                          "fill values in its place",
                          s.where.describe(), name, fmt::join(tried, ", ")));
}

Source open_source(const Search& s, const std::string& file, const std::string& dataset) {
  Source src = open_source_file(s, file);
  src.dataset = dataset;
  src.dataset_id = Id(H5Dopen2(src.file_id.get(), dataset.c_str(), H5P_DEFAULT));
  if (!src.dataset_id.valid()) {
    forget_error();
    throw Error(fmt::format("{}: the source dataset {} of this virtual dataset is missing from {}; HDF5 would read "
                            "fill values in its place",
                            s.where.describe(), dataset, src.file));
  }
  src.space = dataset_space(src.dataset_id.get(), {src.file, dataset});
  return src;
}

// Equal datatypes, or integers or floats that differ in byte order only:
// HDF5 converts anything else on the way (rounding, saturating).
bool same_values(hid_t a, hid_t b) {
  if (equal_types(a, b) > 0) return true;
  const H5T_class_t ca = H5Tget_class(a);
  if (ca != H5Tget_class(b) || (ca != H5T_INTEGER && ca != H5T_FLOAT)) return false;
  Id x(H5Tcopy(a)), y(H5Tcopy(b));
  if (!x.valid() || !y.valid()) return false;
  H5Tset_order(x.get(), H5T_ORDER_LE);
  H5Tset_order(y.get(), H5T_ORDER_LE);
  const bool equal = H5Tequal(x.get(), y.get()) > 0;
  forget_error();
  return equal;
}

void check_type(const Search& s, const Source& src) {
  Id vtype(H5Dget_type(s.dataset), s.where, "cannot read the datatype");
  Id stype(H5Dget_type(src.dataset_id.get()), {src.file, src.dataset}, "cannot read the datatype");
  if (!same_values(vtype.get(), stype.get()))
    throw Error(fmt::format("{}: the source {}: {} of this virtual dataset is {}, the virtual dataset {}; HDF5 would "
                            "convert the values",
                            s.where.describe(), src.file, src.dataset, dtype_name(stype.get()),
                            dtype_name(vtype.get())));
}

// One axis of a regular hyperslab; count or block may be H5S_UNLIMITED.
struct Axis {
  hsize_t start, stride, count, block;
  bool unlimited() const { return count == H5S_UNLIMITED || block == H5S_UNLIMITED; }
  hsize_t per_position() const { return count * block; }  // fixed axes only
};

std::optional<std::vector<Axis>> regular_axes(hid_t space, const Location& where) {
  if (H5Sget_select_type(space) != H5S_SEL_HYPERSLABS) return std::nullopt;
  if (check(H5Sis_regular_hyperslab(space), where, "cannot read a virtual mapping's selection") <= 0)
    return std::nullopt;
  const int rank = check(H5Sget_simple_extent_ndims(space), where, "cannot read a virtual mapping's rank");
  std::vector<hsize_t> start(rank), stride(rank), count(rank), block(rank);
  check(H5Sget_regular_hyperslab(space, start.data(), stride.data(), count.data(), block.data()), where,
        "cannot read a virtual mapping's selection");
  std::vector<Axis> axes;
  for (int d = 0; d < rank; ++d) axes.push_back({start[d], stride[d], count[d], block[d]});
  return axes;
}

// How many indices below `extent` an unlimited axis selects.
hsize_t selected_below(const Axis& a, hsize_t extent) {
  if (extent <= a.start) return 0;
  const hsize_t n = extent - a.start;
  if (a.block == H5S_UNLIMITED) return n;
  return n / a.stride * a.block + std::min(n % a.stride, a.block);
}

int unlimited_axis(const std::optional<std::vector<Axis>>& axes) {
  if (axes)
    for (std::size_t d = 0; d < axes->size(); ++d)
      if ((*axes)[d].unlimited()) return static_cast<int>(d);
  return -1;
}

[[noreturn]] void too_small(const Search& s, const Source& src, const std::string& detail) {
  throw Error(fmt::format("{}: the source {}: {} of this virtual dataset has shape {}, smaller than its mapping ({}); "
                          "HDF5 would read fill values (or other bytes) past its end",
                          s.where.describe(), src.file, src.dataset, shape_text(src.space.dims), detail));
}

// An unlimited mapping: the source rows it has must fill the rows the
// virtual dataset's extent gives it.
void check_unlimited(const Search& s, const Source& src, const std::vector<Axis>& v, int uv,
                     const std::vector<Axis>& from, int us) {
  for (std::size_t d = 0; d < from.size(); ++d) {
    const Axis& a = from[d];
    if (static_cast<int>(d) != us && a.start + (a.count - 1) * a.stride + a.block > src.space.dims[d])
      too_small(s, src, fmt::format("axis {} up to index {}", d, a.start + (a.count - 1) * a.stride + a.block - 1));
  }
  const SpaceInfo extent = dataset_space(s.dataset, s.where);
  hsize_t needed = selected_below(v[uv], extent.dims[uv]);
  hsize_t held = selected_below(from[us], src.space.dims[us]);
  for (std::size_t d = 0; d < v.size(); ++d)
    if (static_cast<int>(d) != uv) needed *= v[d].per_position();
  for (std::size_t d = 0; d < from.size(); ++d)
    if (static_cast<int>(d) != us) held *= from[d].per_position();
  if (needed > held)
    too_small(s, src, fmt::format("it maps {} elements onto the virtual extent {}, the source holds {}", needed,
                                  shape_text(extent.dims), held));
}

// A mapping that selects all of the source: HDF5 stores no extent with it
// and takes the source's own, whose elements must then fill the virtual
// selection exactly.
void check_whole(const Search& s, hid_t vspace, const Source& src) {
  const auto needed = static_cast<std::uint64_t>(
      check(H5Sget_select_npoints(vspace), s.where, "cannot read a virtual mapping"));
  if (src.space.elements() < needed)
    too_small(s, src, fmt::format("all of it mapped onto {} elements", needed));
  if (src.space.elements() > needed)
    throw Error(fmt::format("{}: the source {}: {} of this virtual dataset has shape {}, more elements than its "
                            "mapping's {}",
                            s.where.describe(), src.file, src.dataset, shape_text(src.space.dims), needed));
}

void check_mapping(const Search& s, hid_t dcpl, std::size_t index, const Source& src) {
  Id vspace(H5Pget_virtual_vspace(dcpl, index), s.where, "cannot read a virtual mapping");
  Id sspace(H5Pget_virtual_srcspace(dcpl, index), s.where, "cannot read a virtual mapping");
  if (H5Sget_select_type(sspace.get()) == H5S_SEL_ALL) return check_whole(s, vspace.get(), src);
  const int rank = check(H5Sget_simple_extent_ndims(sspace.get()), s.where, "cannot read a virtual mapping's rank");
  if (src.space.null_space || static_cast<std::size_t>(rank) != src.space.dims.size())
    throw Error(fmt::format("{}: the source {}: {} of this virtual dataset has shape {}, its mapping selects in rank {}",
                            s.where.describe(), src.file, src.dataset, shape_text(src.space.dims), rank));
  const auto v = regular_axes(vspace.get(), s.where);
  const auto from = regular_axes(sspace.get(), s.where);
  const int uv = unlimited_axis(v), us = unlimited_axis(from);
  if (uv >= 0 && us >= 0) return check_unlimited(s, src, *v, uv, *from, us);
  if (uv >= 0 || us >= 0)
    throw Error(s.where.describe() + ": a virtual mapping unlimited on one side only is not supported");
  if (check(H5Sget_select_npoints(sspace.get()), s.where, "cannot read a virtual mapping") == 0) return;
  std::vector<hsize_t> lo(rank), hi(rank);
  check(H5Sget_select_bounds(sspace.get(), lo.data(), hi.data()), s.where, "cannot read a virtual mapping");
  for (int d = 0; d < rank; ++d)
    if (hi[d] >= src.space.dims[d]) too_small(s, src, fmt::format("it reads up to index {} on axis {}", hi[d], d));
}

void check_sources(const Search& s);

// The mappings of one virtual dataset, by source (file and dataset as HDF5 reads their names).
using Mappings = std::map<std::pair<std::string, std::string>, std::vector<std::size_t>>;

Mappings read_mappings(const Search& s, hid_t dcpl) {
  std::size_t count = 0;
  check(H5Pget_virtual_count(dcpl, &count), s.where, "cannot read the virtual mappings");
  Mappings out;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string file = mapping_name(dcpl, i, true, s.where);
    const std::string dataset = mapping_name(dcpl, i, false, s.where);
    const ParsedName f = parse_source_name(file), d = parse_source_name(dataset);
    if (f.invalid || d.invalid)
      throw Error(fmt::format("{}: the virtual mapping's source name {}: {} has an invalid '%' sequence",
                              s.where.describe(), file, dataset));
    if (f.pattern || d.pattern)
      throw Error(fmt::format("{}: this virtual dataset names its sources printf-style ({}: {}); one pattern maps to "
                              "any number of files, which microbatch cannot check; not supported",
                              s.where.describe(), file, dataset));
    out[{f.literal, d.literal}].push_back(i);
  }
  return out;
}

void check_sources(const Search& s) {
  Id dcpl(H5Dget_create_plist(s.dataset), s.where, "cannot read the dataset's creation properties");
  if (layout_of(dcpl.get(), s.where) != H5D_VIRTUAL) return;
  if (s.depth > kMaxNesting)
    throw Error(fmt::format("{}: virtual datasets nested deeper than {} levels (a cycle?)", s.where.describe(),
                            kMaxNesting));
  for (const auto& [source, indices] : read_mappings(s, dcpl.get())) {
    const Source src = open_source(s, source.first, source.second);
    check_type(s, src);
    for (const std::size_t i : indices) check_mapping(s, dcpl.get(), i, src);
    check_sources({src.dataset_id.get(), {fmt::format("{}: source {}", s.where.describe(), src.file), src.dataset},
                   s.depth + 1});
  }
}

}  // namespace

std::string virtual_source_name(const std::string& literal) {
  std::string out;
  for (const char c : literal) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

void add_mapping(hid_t dcpl, hid_t virtual_space, const VirtualSource& source, const Location& where) {
  check(H5Pset_virtual(dcpl, virtual_space, source.file.c_str(), source.dataset.c_str(), source.space), where,
        "cannot map a virtual dataset");
}

Id create_virtual_dataset(hid_t parent, const std::string& name, hid_t type, const Extent& extent,
                          const Location& where) {
  return Id(H5Dcreate2(parent, name.c_str(), type, extent.space.get(), H5P_DEFAULT, extent.dcpl.get(), H5P_DEFAULT),
            where, "cannot create the virtual dataset");
}

void check_virtual_sources(hid_t dataset, const Location& where) { check_sources({dataset, where, 0}); }

}  // namespace mb::io::h5
