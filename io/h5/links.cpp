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

}  // namespace mb::io::h5
