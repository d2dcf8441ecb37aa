#pragma once
// Attributes: names, and values read whole with their own type and dataspace.
#include <string>
#include <utility>
#include <vector>

#include "io/h5/buffer.hpp"
#include "io/h5/space.hpp"

namespace mb::io::h5 {

struct AttributeValue {
  Id type;
  Id space;
  SpaceInfo shape;
  Buffer data;
  explicit AttributeValue(Id t) : type(std::move(t)), data(type.get()) {}
};

// In name order.
std::vector<std::string> attribute_names(hid_t object, const Location& where);

// Whether an attribute (open as `attr`, of file type `type`) is too large
// for one object header message (64 KiB), so that only a version 2 object
// header, with dense attribute storage, can hold it. Errs on the side of
// "too large" by a few bytes; that only costs a newer object header.
// `copies`: the same for an attribute of `rank` holding that many copies
// of `attr`'s values (a stacked attribute).
bool too_large_for_a_header_message(hid_t attr, hid_t type, const std::string& name, std::size_t rank,
                                    std::uint64_t copies = 1);

AttributeValue read_attribute(hid_t object, const std::string& name, const Location& where);
void write_attribute(hid_t object, const std::string& name, const AttributeValue& value, const Location& where);
// A new attribute of `type` and dataspace `space`, its values not yet written.
Id create_attribute(hid_t object, const std::string& name, hid_t type, hid_t space, const Location& where);

// Every attribute of an object, read once to be written to many copies.
using Attributes = std::vector<std::pair<std::string, AttributeValue>>;
Attributes read_attributes(hid_t object, const Location& where);
// The same, for attributes whose names are known (the tree's, in name
// order): no listing of the object's attributes again.
Attributes read_attributes(hid_t object, const Location& where, std::vector<std::string> names);
void write_attributes(hid_t object, const Attributes& attributes, const Location& where);

}  // namespace mb::io::h5
