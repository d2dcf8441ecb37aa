#include "io/tree/input.hpp"

#include "io/remote/driver.hpp"

namespace mb::io::tree {

h5::Id open_input(const Source& input, h5::Cache cache) {
  if (!input.is_remote()) return h5::open_local(input.name(), cache);
  return h5::open_by_driver(input.name(), remote::file_access(input.address()), cache, {input.shown(), ""});
}

}  // namespace mb::io::tree
