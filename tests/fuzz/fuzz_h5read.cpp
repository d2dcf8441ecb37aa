// libFuzzer target: bytes -> an HDF5 file image opened in memory -> the tree
// reader, attribute values, and offsets as split reads them.
//
// libhdf5 1.10.8 itself crashes and loops on some corrupt files (its
// global-heap reader). Those are not ours to fix; the CLI contains them
// (io/run/guard). This target therefore exercises what we call on the way to
// a plan, and CI runs it in fork mode so that library crashes are counted
// and kept, not fatal (see scripts/fuzz.sh).
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/resolve.hpp"
#include "io/h5/handle.hpp"
#include "io/h5/library.hpp"
#include "io/tree/reader.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mb::io::h5::init_library();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8 || size > (1u << 20)) return 0;
  std::vector<std::uint8_t> image(data, data + size);
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_core(fapl, 1 << 16, 0);
  H5Pset_file_image(fapl, image.data(), image.size());
  const hid_t file = H5Fopen("fuzz.h5", H5F_ACC_RDONLY, fapl);
  H5Pclose(fapl);
  if (file < 0) return 0;
  {
    mb::io::h5::Id owned(file);
    try {
      const mb::NodeInfo tree = mb::io::tree::read_tree(owned.get(), "fuzz.h5");
      mb::for_each_node(tree, [&](const mb::NodeInfo& n) {
        for (const auto& a : n.attributes) mb::io::tree::attribute_preview(owned.get(), "fuzz.h5", n.path, a.name);
      });
      const mb::Resolution r = mb::resolve(tree, mb::SpecNode::make_default(), "default");
      (void)r;
    } catch (const mb::Error&) {
    }
  }
  H5garbage_collect();
  return 0;
}
