#pragma once
// Datatypes and values as inspect --json writes them (docs/schema/
// inspect.schema.json): a dtype numpy reads back (np.dtype(j["dtype"]) is
// h5py's dtype for the data), the HDF5 type beside it where numpy's cannot
// say everything, and values as plain JSON values.
#include <nlohmann/json.hpp>
#include <vector>

#include "core/values.hpp"

namespace mb::specs {

// numpy's spelling: "<i4", ">f8", "<f2", "|b1" (h5py's bool enum), "|S10",
// "(2, 3)<f8" (an HDF5 array), "<c16" (h5py's complex compound), "O"
// (variable-length strings and sequences), "|V4" (opaque); a compound is
// numpy's dict form {"names", "formats", "offsets", "itemsize"}, which
// np.dtype also takes.
nlohmann::ordered_json dtype_json(const ValueType& type);

// The HDF5 type where the dtype does not say everything (variable-length
// data, enums other than h5py's bool, opaque data; recursively inside
// compounds and arrays); null otherwise. {"class": "string", "variable":
// true}, {"class": "vlen", "base": DTYPE, "h5type": ...}, {"class": "enum",
// "base": DTYPE, "members": {"NAME": VALUE}}, {"class": "opaque", "size": N},
// {"class": "compound", "members": {"NAME": H5TYPE}}, {"class": "array",
// "base": H5TYPE}.
nlohmann::ordered_json h5type_json(const ValueType& type);

// `count` elements at `data` (in `type`'s layout and byte order) as JSON,
// nested by `shape` (a bare value for shape []): integers and floats as
// numbers, NaN and infinities as the strings "nan", "inf", "-inf"; h5py's
// bool as true/false, other enums as their integer value; strings as
// strings (fixed-length ones without their trailing NULs; bytes that are not
// UTF-8 as \xNN), a null variable-length string as null; compounds as
// objects by member name; arrays and sequences as lists; opaque bytes as a
// string of \xNN.
nlohmann::ordered_json values_json(const ValueType& type, const void* data, const std::vector<std::uint64_t>& shape);

}  // namespace mb::specs
