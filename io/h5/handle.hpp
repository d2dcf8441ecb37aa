#pragma once
// The thin checked layer over the HDF5 C API: where a call acts, RAII
// handles, and checked calls. Every failing call becomes an mb::Error that
// names the file and the object path; the library's own error stack is
// silenced (it is logged at debug level instead).
#include <hdf5.h>

#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/tree.hpp"

namespace mb::io::h5 {

// Where an HDF5 call acts, for messages: "file.h5: /group/dataset".
struct Location {
  std::string file;
  std::string path;
  std::string describe() const { return path.empty() ? file : file + ": " + path; }
  Location child(const std::string& name) const { return {file, join_path(path, name)}; }
  Location attribute(const std::string& name) const { return {file, path + "@" + name}; }
};

// Throws mb::Error "<file>: <path>: <action> (<innermost HDF5 message>)".
[[noreturn]] void fail(const Location& where, const std::string& action);

// Checks a call that returns an id, a count or a status (negative = failure).
template <typename T>
T check(T result, const Location& where, const char* action) {
  if (result < 0) fail(where, action);
  return result;
}

// Whether the error stack (left as it is) says that the bytes the library
// read hold no HDF5 file (HDF5's "not an HDF5 file" error class), so that
// opening by a driver of ours can say so instead of the library's words.
bool stack_says_not_hdf5();

// Clears the error stack after a call whose failure is an expected answer
// (a chunk never written, a dataset never allocated).
void forget_error();

// A file driver of ours (io/remote) failed inside a library call with this
// error: the next fail() throws it instead of the library's own words
// ("file read failed"), which do not say that a server answered 403.
void note_driver_error(const Error& error);
bool driver_failed();

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

// A further reference to `id` (H5Iinc_ref), released by the Id returned;
// an invalid Id when the library refuses it.
Id share(hid_t id);

// Opens the group or dataset at `path` (absolute, or relative to `base`).
Id open_object(hid_t base, const std::string& path, const Location& where);

}  // namespace mb::io::h5
