#pragma once
// HDF5 behind RAII handles and checked calls. Every failing call becomes an
// mb::Error that names the file and the object path; the library's own error
// stack is silenced (it is logged at debug level instead).
#include <hdf5.h>

#include <string>
#include <utility>
#include <vector>

#include "core/tree.hpp"

namespace mb::h5 {

// Where an HDF5 call acts, for messages: "file.h5: /group/dataset".
struct Location {
  std::string file;
  std::string path;
  std::string describe() const { return path.empty() ? file : file + ": " + path; }
  Location child(const std::string& name) const { return {file, join_path(path, name)}; }
};

// Turns off HDF5's automatic error printing and its atexit teardown. Call
// once at start-up. (Every output is closed, checked, before it is
// published; the teardown would only re-close what failed to close, and
// libhdf5 1.10.8 can crash doing that after a failed write.)
void init_library();

// Closes that HDF5 refused (after a failed write, say); such handles are
// expected to be left open at exit.
std::size_t failed_closes();

// HDF5 objects (files, groups, datasets, ...) still open in this process.
std::size_t open_object_count();

// Throws mb::Error "<file>: <path>: <action> (<innermost HDF5 message>)".
[[noreturn]] void fail(const Location& where, const std::string& action);

// Checks a call that returns an id, a count or a status (negative = failure).
template <typename T>
T check(T result, const Location& where, const char* action) {
  if (result < 0) fail(where, action);
  return result;
}

// Owns one HDF5 identifier of any kind and releases it exactly once.
class Id {
 public:
  Id() = default;
  explicit Id(hid_t id) : id_(id) {}
  Id(hid_t id, const Location& where, const char* action) : id_(check(id, where, action)) {}
  ~Id() { reset(); }
  Id(Id&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Id& operator=(Id&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();
  // Releases the id and reports a failure (a file's final flush can fail).
  void close(const Location& where);

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// Files.
Id open_file_read_only(const std::string& path);
// Creates `path`; messages name `shown_as` (the final name of a temporary).
Id create_file(const std::string& path, const std::string& shown_as);

// Dataspaces: shape of a dataset or attribute.
struct SpaceInfo {
  Shape dims;
  std::vector<MaxDim> max_dims;
  bool null_space = false;
  std::uint64_t elements() const;
};
SpaceInfo space_info(hid_t space, const Location& where);
Id make_space(const Shape& dims, const std::vector<MaxDim>& max_dims, const Location& where);
Id make_space(const Shape& dims, const Location& where);
Id make_null_space(const Location& where);

// Refuses to allocate `bytes` (over 1 MiB) for a value read whole from
// `object`'s file when the file is smaller: a corrupt dataspace can claim
// any size.
void check_fits_in_file(hid_t object, std::uint64_t bytes, const Location& where);

// Selects `count` elements per dimension from `start`, `stride` apart (an
// empty stride means 1), in a simple dataspace.
void select_box(hid_t space, const Shape& start, const Shape& count, const Shape& stride, const Location& where);

}  // namespace mb::h5
