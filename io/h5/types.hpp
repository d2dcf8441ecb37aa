#pragma once
// HDF5 datatypes: their description for core/values, their numpy-style name,
// and what reducers need (native integers; floats in their own format).
#include <hdf5.h>

#include <optional>
#include <string>

#include "core/float_format.hpp"
#include "core/reduce.hpp"
#include "core/spec.hpp"
#include "core/values.hpp"
#include "io/h5/handle.hpp"

namespace mb::io::h5 {

// Checked queries of a datatype (HDF5's error values look like answers).
H5T_class_t class_of(hid_t type, const Location& where);
bool is_unsigned(hid_t type, const Location& where);
std::size_t precision_of(hid_t type, const Location& where);
// Whether `type` is of class `cls` or has a member or base of that class.
bool contains_class(hid_t type, H5T_class_t cls, const Location& where);
bool same_type(hid_t a, hid_t b, const Location& where);  // equal_types (io/h5/intern.hpp)
bool is_variable_string(hid_t type, const Location& where);
Id copy_type(hid_t type, const Location& where);
// A variable-length C string type for memory, of `like`'s character set.
Id variable_string_type(hid_t like, const Location& where);
// Whether `type` is a named (committed) datatype, one stored in a file.
bool is_committed(hid_t type, const Location& where);

// Describes `type` (as used in memory). Throws mb::Error naming `where` for
// classes microbatch cannot handle (references, time).
ValueType value_type_of(hid_t type, const Location& where);

// numpy-style name: int64, float16, bool, complex64, |S8, str, {a: int32, ...}.
std::string dtype_name(hid_t type);

// Bytes of one element; a failure (0 from HDF5) is an error, not a size.
std::size_t size_of(hid_t type, const Location& where);

// True when elements hold pointers (variable-length strings or sequences),
// so buffers must be reclaimed and compared by content.
bool has_variable_length(hid_t type);

// Whether elements of `type` mean the same in any file, so that their
// stored bytes (contiguous data, or raw chunks) can be copied: variable-length
// data and references hold addresses in their own file.
bool copyable_as_bytes(hid_t type);

// The layout of a float type (fields, bias, byte order, padding set to one);
// nullopt for other classes and for floats that are not IEEE-like (VAX byte
// order, a mantissa without an implied leading bit).
std::optional<FloatFormat> float_format(hid_t type);

// The reducer kind for a numeric type: integers of 1, 2, 4 or 8 bytes, and
// floats whose every value double holds (widens_to_double); nullopt for
// anything else.
std::optional<NumKind> numeric_kind(hid_t type);

// HDF5's predefined native type for an integer kind (not to be closed).
// Floats have none: they are read and written in their own type, so that
// HDF5 converts nothing and the rounding is ours.
hid_t native_type(NumKind kind);

// One element of `type` holding `pad` exactly, in the type's own byte
// order: what --cp-pad writes. Integers and floats take a number (none: 0),
// h5py's bool (an enum of FALSE and TRUE) takes true or false (none:
// false). Throws mb::Error naming the dataset for a value the type cannot
// hold (HDF5 would clamp or round it), a bool pad for numbers or a number
// for bool data, and any other type (other enums: which member pads is no
// number's to say).
std::vector<unsigned char> pad_element(hid_t type, const std::optional<PadValue>& pad, const Location& where);

}  // namespace mb::io::h5
