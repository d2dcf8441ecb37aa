// The netCDF-4 preset: files written by netCDF-C, netCDF4-python, xarray
// (either engine) and h5netcdf carry _NCProperties on the root group.
// Their default spec cuts every variable along one dimension, wherever its
// axis is, and replicates the variables without it.
#include <cstdlib>
#include <limits>

#include "core/presets.hpp"

namespace mb {
namespace {

bool detect(const NodeInfo& root) { return has_attribute(root, "_NCProperties"); }

bool unlimited(const NodeInfo& scale) {
  return !scale.storage.max_shape.empty() && !scale.storage.max_shape[0].has_value();
}

// _Netcdf4Dimid's value, or a large number for a scale without one.
long long dimid(const NodeInfo& scale) {
  const std::string* text = attribute_text(scale, "_Netcdf4Dimid");
  return text ? std::atoll(text->c_str()) : std::numeric_limits<long long>::max();
}

// The dimension the spec cuts: the root group's unlimited dimension if it
// has one (the first by dimension id), else its first dimension (lowest
// _Netcdf4Dimid, then name order); "" for a file without dimensions.
std::string cut_dimension(const NodeInfo& root) {
  const NodeInfo* best = nullptr;
  const auto better = [&](const NodeInfo& c) {
    if (!best) return true;
    if (unlimited(c) != unlimited(*best)) return unlimited(c);
    return dimid(c) < dimid(*best);
  };
  for (const auto& c : root.children)
    if (!c.is_group() && c.is_scale && c.rank() == 1 && better(c)) best = &c;
  return best ? best->name : std::string();
}

SpecNode spec(const NodeInfo& root) {
  const std::string dim = cut_dimension(root);
  if (dim.empty()) return SpecNode::make_default();
  SpecNode out;
  out.kind = SpecNode::Kind::Object;
  out.star = std::make_shared<SpecNode>(SpecNode::make_leaf(LeafRule::split_dim(dim)));
  return out;
}

}  // namespace

Preset netcdf_preset() {
  return {"netcdf",
          "netCDF-4 (xarray, netCDF4-python, h5netcdf; root attribute _NCProperties): every variable cut along the "
          "unlimited dimension, else the first dimension; variables without it replicated",
          detect, spec};
}

}  // namespace mb
