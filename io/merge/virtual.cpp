// merge --virtual: split leaves become virtual datasets whose rows map onto
// the inputs' rows, through the same row maps a copy would use.
#include <filesystem>

#include "core/selection.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/virtual.hpp"
#include "io/merge/virtual.hpp"

namespace mb::io::merge {

h5::Id create_virtual(const Context& ctx, const DatasetPair& in, const MergedLeaf& leaf, hid_t parent) {
  const h5::Location where = ctx.out_where(in.node.path);
  const h5::Extent extent{
      leaf.dims, h5::creation_without_times(where),
      h5::make_space(leaf.dims, h5::max_dims_holding(in.model.space.max_dims, leaf.dims), where)};
  // HDF5 reads source names printf-style: a '%' in a path or a dataset name is written as "%%".
  const std::string dataset = h5::virtual_source_name(in.node.path);
  for (std::size_t i = 0; i < ctx.job.inputs.size(); ++i) {
    if (leaf.shared && ctx.plan.twin(i) != i) continue;  // CP: rank 0's file holds the same
    const std::string file =
        h5::virtual_source_name(std::filesystem::absolute(ctx.job.inputs[i].source.name()).lexically_normal().string());
    // Input i's shape: the model's, with the rows the plan gives it.
    Shape dims = in.model.space.dims;
    dims[leaf.axis] = rows_in(leaf.maps[i]);
    h5::Id source_space = h5::make_space(dims, where);
    auto places = place_segments(leaf.maps[i], leaf.axis, leaf.dims, dims);
    if (leaf.sequence_axis) places = place_positions(places, leaf.positions[i], *leaf.sequence_axis);
    for (const auto& place : places) {
      const h5::Id virtual_space = h5::copy_space(extent.space.get(), where);
      h5::select(virtual_space.get(), place.batch, where);
      // A whole source as an "all" selection: libhdf5 keeps several copies of
      // every mapping's selections, and a hyperslab's is the larger.
      if (places.size() > 1) h5::select(source_space.get(), place.piece, where);
      h5::add_mapping(extent.dcpl.get(), virtual_space.get(), {file, dataset, source_space.get()}, where);
    }
  }
  return h5::create_virtual_dataset(parent, in.node.name, in.model.type, extent, where);
}

}  // namespace mb::io::merge
