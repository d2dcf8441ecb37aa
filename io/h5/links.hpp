#pragma once
// A group's links: the names of its members and what kind of link each is
// (hard, soft, external).
#include <string>
#include <vector>

#include "io/h5/handle.hpp"

namespace mb::io::h5 {

struct Link {
  std::string name;
  H5L_type_t type = H5L_TYPE_ERROR;
};

// In name order.
std::vector<Link> links_of(hid_t group, const Location& where);

// Where a soft link points ("/a/b") or an external link ("file.h5:/a/b"):
// its value, not the object it leads to (which may not exist).
std::string link_target(hid_t group, const Link& link, const Location& where);

}  // namespace mb::io::h5
