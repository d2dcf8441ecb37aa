#pragma once
// In-memory HDF5 files for the io/ unit tests (the core driver without a
// backing store: nothing reaches the disk), and what the tests build in
// them and read back. Everything here calls the C API directly, not io/h5,
// so that what io/ is given and what it is judged by do not depend on the
// code under test.
#include <doctest/doctest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mb::test::h5 {

// Owns one id; closes it by dropping the reference (H5Idec_ref closes any kind).
class Held {
 public:
  explicit Held(hid_t id) : id_(id) { REQUIRE(id_ >= 0); }
  ~Held() {
    if (id_ >= 0 && H5Iis_valid(id_) > 0) H5Idec_ref(id_);
  }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }  // NOLINT: the tests pass it to C calls

 private:
  hid_t id_;
};

// A name not yet used by any file of this process: the core driver tells
// open files apart by name.
inline std::string unique_name(const std::string& stem) {
  static int n = 0;
  return stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".h5";
}

// An empty file in memory named `name` (for messages).
inline hid_t memory_file(const std::string& name) {
  Held fapl(H5Pcreate(H5P_FILE_ACCESS));
  REQUIRE(H5Pset_fapl_core(fapl, 1 << 16, /*backing_store=*/0) >= 0);
  return H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
}

inline std::vector<hsize_t> dims_of(const std::vector<std::uint64_t>& dims) {
  return std::vector<hsize_t>(dims.begin(), dims.end());
}

// A dataset of `file_type` and shape `dims` at `name` of `loc`, holding
// `data` (elements of `mem_type`, row-major; none: left unwritten).
inline hid_t make_dataset(hid_t loc, const std::string& name, hid_t file_type, const std::vector<std::uint64_t>& dims,
                          hid_t mem_type = H5I_INVALID_HID, const void* data = nullptr, hid_t dcpl = H5P_DEFAULT) {
  const auto d = dims_of(dims);
  Held space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr));
  const hid_t dset = H5Dcreate2(loc, name.c_str(), file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  REQUIRE(dset >= 0);
  if (data) REQUIRE(H5Dwrite(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  return dset;
}

// Chunked creation properties, gzip level `gzip` when not negative.
inline hid_t chunked(const std::vector<std::uint64_t>& chunk, int gzip = -1) {
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const auto c = dims_of(chunk);
  REQUIRE(H5Pset_chunk(dcpl, static_cast<int>(c.size()), c.data()) >= 0);
  if (gzip >= 0) REQUIRE(H5Pset_deflate(dcpl, static_cast<unsigned>(gzip)) >= 0);
  return dcpl;
}

// A variable-length UTF-8 string type (for files and memory alike).
inline hid_t vlen_utf8() {
  const hid_t t = H5Tcopy(H5T_C_S1);
  REQUIRE(H5Tset_size(t, H5T_VARIABLE) >= 0);
  REQUIRE(H5Tset_cset(t, H5T_CSET_UTF8) >= 0);
  return t;
}

inline hid_t make_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values,
                          hid_t dcpl = H5P_DEFAULT) {
  Held type(vlen_utf8());
  std::vector<const char*> pointers;
  for (const auto& v : values) pointers.push_back(v.c_str());
  return make_dataset(loc, name, type, {values.size()}, type, pointers.data(), dcpl);
}

// Every string of a variable-length string dataset.
inline std::vector<std::string> read_strings(hid_t dset) {
  Held type(vlen_utf8());
  Held space(H5Dget_space(dset));
  const auto n = static_cast<std::size_t>(H5Sget_simple_extent_npoints(space));
  std::vector<char*> pointers(n, nullptr);
  REQUIRE(H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) >= 0);
  std::vector<std::string> out;
  for (char* p : pointers) out.emplace_back(p ? p : "");
  REQUIRE(H5Dvlen_reclaim(type, space, H5P_DEFAULT, pointers.data()) >= 0);
  return out;
}

// Every element of a dataset as `T` (converted to `mem_type` by HDF5).
template <typename T>
std::vector<T> read_all(hid_t dset, hid_t mem_type) {
  Held space(H5Dget_space(dset));
  std::vector<T> out(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  REQUIRE(H5Dread(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) >= 0);
  return out;
}

// A scalar attribute.
inline void set_attribute(hid_t object, const std::string& name, hid_t type, const void* value) {
  Held space(H5Screate(H5S_SCALAR));
  Held attr(H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT));
  REQUIRE(H5Awrite(attr, type, value) >= 0);
}
inline void set_string_attribute(hid_t object, const std::string& name, const std::string& value) {
  Held type(vlen_utf8());
  const char* p = value.c_str();
  set_attribute(object, name, type, &p);
}

// What `fn` writes to file descriptor 2 (stderr, where HDF5 prints its
// error stacks): fd 2 points at a temporary file while it runs.
inline std::string stderr_of(const std::function<void()>& fn) {
  std::fflush(stderr);
  std::FILE* sink = std::tmpfile();
  REQUIRE(sink != nullptr);
  const int saved = ::dup(2);
  REQUIRE(saved >= 0);
  REQUIRE(::dup2(::fileno(sink), 2) >= 0);
  struct Restore {
    int saved;
    ~Restore() {
      std::fflush(stderr);
      ::dup2(saved, 2);
      ::close(saved);
    }
  };
  {
    Restore restore{saved};
    fn();
  }
  std::string out;
  std::rewind(sink);
  char chunk[4096];
  for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, sink)) > 0;) out.append(chunk, n);
  std::fclose(sink);
  return out;
}

}  // namespace mb::test::h5
