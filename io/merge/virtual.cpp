// merge --virtual: split leaves become virtual datasets whose rows map onto
// the inputs' rows, through the same row maps a copy would use.
#include <filesystem>

#include "core/selection.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/virtual.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merge {

h5::Id create_virtual(const Context& ctx, const DatasetPair& in, const MergedLeaf& leaf, hid_t parent) {
  const h5::Location where = ctx.out_where(in.node.path);
  h5::Id dcpl(H5Pcreate(H5P_DATASET_CREATE), where, "cannot create creation properties");
  h5::check(H5Pset_obj_track_times(dcpl.get(), 0), where, "cannot turn off object times");  // reproducible outputs
  h5::Id out_space = h5::make_space(leaf.dims, h5::max_dims_holding(in.model.space.max_dims, leaf.dims), where);
  // HDF5 reads source names printf-style: a '%' in a path or a dataset name is written as "%%".
  const std::string dataset = h5::virtual_source_name(in.node.path);
  for (std::size_t i = 0; i < ctx.job.inputs.size(); ++i) {
    if (leaf.shared && ctx.plan.twin(i) != i) continue;  // CP: rank 0's file holds the same
    const std::string source =
        h5::virtual_source_name(std::filesystem::absolute(ctx.job.inputs[i].path).lexically_normal().string());
    // Input i's shape: the model's, with the rows the plan gives it.
    Shape dims = in.model.space.dims;
    dims[leaf.axis] = rows_in(leaf.maps[i]);
    h5::Id source_space = h5::make_space(dims, where);
    auto places = place_segments(leaf.maps[i], leaf.axis, leaf.dims, dims);
    if (leaf.sequence_axis) places = place_positions(places, leaf.positions[i], *leaf.sequence_axis);
    for (const auto& place : places) {
      h5::Id virtual_space(H5Scopy(out_space.get()), where, "cannot copy a dataspace");
      h5::select(virtual_space.get(), place.batch, where);
      // A whole source as an "all" selection: libhdf5 keeps several copies of
      // every mapping's selections, and a hyperslab's is the larger.
      if (places.size() > 1) h5::select(source_space.get(), place.piece, where);
      h5::check(H5Pset_virtual(dcpl.get(), virtual_space.get(), source.c_str(), dataset.c_str(),
                               source_space.get()),
                where, "cannot map a virtual dataset");
    }
  }
  return h5::Id(H5Dcreate2(parent, in.node.name.c_str(), in.model.type, out_space.get(), H5P_DEFAULT,
                           dcpl.get(), H5P_DEFAULT),
                where, "cannot create the virtual dataset");
}

}  // namespace mb::io::merge
