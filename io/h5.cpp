#include "io/h5.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "core/error.hpp"

namespace mb::h5 {
namespace {

// Collects the HDF5 error stack: the innermost message for the user, the
// whole stack for the debug log.
struct StackText {
  std::string innermost;
  std::string all;
};

// HDF5's messages may span lines (a failed write prints a timestamp with a
// newline); ours are one line.
std::string one_line(const char* text) {
  std::string out;
  bool space = false;
  for (const char* p = text; *p; ++p) {
    const bool ws = *p == ' ' || *p == '\n' || *p == '\r' || *p == '\t';
    if (ws) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += *p;
  }
  return out;
}

herr_t walk_entry(unsigned n, const H5E_error2_t* e, void* data) {
  auto* text = static_cast<StackText*>(data);
  const std::string line = std::string(e->func_name ? e->func_name : "?") + ": " + (e->desc ? e->desc : "");
  text->all += "\n  #" + std::to_string(n) + " " + line;
  if (e->desc && *e->desc) text->innermost = one_line(e->desc);  // walking down: the last is the root cause
  return 0;
}

StackText current_stack() {
  StackText text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_entry, &text);
  H5Eclear2(H5E_DEFAULT);
  return text;
}

}  // namespace

std::size_t g_failed_closes = 0;

void init_library() {
  H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

std::size_t failed_closes() { return g_failed_closes; }

std::size_t open_object_count() {
  const ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

void fail(const Location& where, const std::string& action) {
  const StackText stack = current_stack();
  spdlog::debug("HDF5 error stack for {} ({}):{}", where.describe(), action, stack.all);
  std::string message = where.describe() + ": " + action;
  std::string cause = stack.innermost;
  // A failed system call reads "... errno = 27, error message = 'File too large', ...": keep the errno text.
  const std::string marker = "error message = '";
  if (auto at = cause.find(marker); at != std::string::npos) {
    const auto from = at + marker.size();
    cause = cause.substr(from, cause.find('\'', from) - from);
  }
  if (!cause.empty()) message += " (" + cause + ")";
  throw Error(message);
}

void Id::reset() {
  if (id_ >= 0) {
    if (H5Iis_valid(id_) > 0 && H5Idec_ref(id_) < 0) {
      ++g_failed_closes;
      H5Eclear2(H5E_DEFAULT);
    }
    id_ = H5I_INVALID_HID;
  }
}

void Id::close(const Location& where) {
  if (id_ < 0) return;
  const hid_t id = std::exchange(id_, H5I_INVALID_HID);
  herr_t rc;
  switch (H5Iget_type(id)) {
    case H5I_FILE: rc = H5Fclose(id); break;
    case H5I_DATASET: rc = H5Dclose(id); break;
    case H5I_GROUP: rc = H5Gclose(id); break;
    case H5I_ATTR: rc = H5Aclose(id); break;
    default: rc = H5Idec_ref(id) < 0 ? -1 : 0; break;
  }
  if (rc < 0) ++g_failed_closes;
  check(rc, where, "cannot close (data may not have been written)");
}

Id open_file_read_only(const std::string& path) {
  const Location where{path, ""};
  // Checked first: opening a FIFO would block, a directory gives an obscure error.
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(path + ": no such file");
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(path + ": not a regular file");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw Error(path + ": not an HDF5 file, or not readable");
  }
  // Each object is read once: dropping its metadata when it is closed keeps
  // memory flat on trees of many objects, and is faster than a cache that
  // grows until the file is closed (merge of 20,000 small datasets: 411 MB,
  // 5.3 s -> 94 MB, 4.5 s). Not for written files: there each close flushes.
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), where, "cannot create file access properties");
  check(H5Pset_evict_on_close(fapl.get(), 1), where, "cannot set evict on close");
  return Id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), where, "cannot open the file read-only");
}

Id create_file(const std::string& path, const std::string& shown_as) {
  const Location where{shown_as, ""};
  // Without a sieve buffer HDF5 writes raw data through at once and keeps no
  // copy of it, so bytes written past the library (file_bytes.hpp) stay.
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), where, "cannot create file access properties");
  check(H5Pset_sieve_buf_size(fapl.get(), 0), where, "cannot set the sieve buffer size");
  return Id(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), where, "cannot create the file");
}

std::uint64_t SpaceInfo::elements() const {
  if (null_space) return 0;
  std::uint64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

SpaceInfo space_info(hid_t space, const Location& where) {
  SpaceInfo info;
  // Kept as an int: a corrupt file can hold a class outside the enum (found by fuzz_h5read under UBSan).
  const int cls = H5Sget_simple_extent_type(space);
  if (cls == H5S_NULL) {
    info.null_space = true;
    return info;
  }
  if (cls != H5S_SCALAR && cls != H5S_SIMPLE) fail(where, "cannot read the dataspace");
  const int rank = check(H5Sget_simple_extent_ndims(space), where, "cannot read the rank");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), max(static_cast<std::size_t>(rank));
  check(H5Sget_simple_extent_dims(space, dims.data(), max.data()), where, "cannot read the shape");
  for (int d = 0; d < rank; ++d) {
    info.dims.push_back(dims[static_cast<std::size_t>(d)]);
    const hsize_t m = max[static_cast<std::size_t>(d)];
    info.max_dims.push_back(m == H5S_UNLIMITED ? MaxDim{} : MaxDim{m});
  }
  return info;
}

Id make_space(const Shape& dims, const std::vector<MaxDim>& max_dims, const Location& where) {
  if (dims.empty()) return Id(H5Screate(H5S_SCALAR), where, "cannot create a scalar dataspace");
  std::vector<hsize_t> d(dims.begin(), dims.end()), m;
  for (const auto& md : max_dims) m.push_back(md ? *md : H5S_UNLIMITED);
  return Id(H5Screate_simple(static_cast<int>(d.size()), d.data(), m.empty() ? nullptr : m.data()), where,
            "cannot create a dataspace");
}

Id make_space(const Shape& dims, const Location& where) { return make_space(dims, {}, where); }

Id make_null_space(const Location& where) { return Id(H5Screate(H5S_NULL), where, "cannot create a null dataspace"); }

void check_fits_in_file(hid_t object, std::uint64_t bytes, const Location& where) {
  constexpr std::uint64_t kAlwaysAffordable = 1u << 20;  // checking costs more than allocating this
  if (bytes <= kAlwaysAffordable) return;
  Id file(H5Iget_file_id(object), where, "cannot find the file of");
  hsize_t size = 0;
  check(H5Fget_filesize(file.get(), &size), where, "cannot read the file size");
  if (bytes > size)
    throw Error(where.describe() + ": claims " + std::to_string(bytes) + " bytes of data in a file of " +
                std::to_string(size) + " bytes (corrupt, or sparse); refusing to read it whole");
}

void select_box(hid_t space, const Shape& start, const Shape& count, const Shape& stride, const Location& where) {
  if (start.empty()) return;  // scalar: the one element is selected already
  std::vector<hsize_t> s(start.begin(), start.end()), c(count.begin(), count.end()), st(stride.begin(), stride.end());
  check(H5Sselect_hyperslab(space, H5S_SELECT_SET, s.data(), st.empty() ? nullptr : st.data(), c.data(), nullptr),
        where, "cannot select a hyperslab");
}

}  // namespace mb::h5
