#include "io/h5/links.hpp"

namespace mb::io::h5 {
namespace {

herr_t collect_link(hid_t, const char* name, const H5L_info_t* info, void* data) {
  static_cast<std::vector<Link>*>(data)->push_back({name, info->type});
  return 0;
}

}  // namespace

std::vector<Link> links_of(hid_t group, const Location& where) {
  std::vector<Link> links;
  check(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_link, &links), where, "cannot list members");
  return links;
}

std::string link_target(hid_t group, const Link& link, const Location& where) {
  const Location at = where.child(link.name);
  H5L_info_t info;
  check(H5Lget_info(group, link.name.c_str(), &info, H5P_DEFAULT), at, "cannot read the link");
  std::vector<char> value(info.u.val_size + 1, '\0');
  check(H5Lget_val(group, link.name.c_str(), value.data(), value.size(), H5P_DEFAULT), at, "cannot read the link");
  if (link.type != H5L_TYPE_EXTERNAL) return value.data();
  const char* file = nullptr;
  const char* object = nullptr;
  check(H5Lunpack_elink_val(value.data(), info.u.val_size, nullptr, &file, &object), at,
        "cannot read the external link");
  return std::string(file) + ":" + object;
}

}  // namespace mb::io::h5
