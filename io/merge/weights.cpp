// Weighted means' weights: one rank-0 number per input, read by path from
// each input before its walk, since a weight may come later in the walk's
// order than the leaves it weighs (and deferred reductions need them all).
#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/merge/checks.hpp"
#include "io/merge/weights.hpp"

namespace mb::io::merge {
namespace {

WeightSource source_of(const LeafRule& rule) { return {rule.weight, rule.weight_attribute}; }

std::string text_of(const WeightSource& source) {
  return source.second.empty() ? source.first : source.first + "@" + source.second;
}

// Every weight the rules name, with the first leaf it weighs.
void collect_sources(const Context& ctx, WeightState& state) {
  for (const auto& [path, rule] : ctx.resolution.datasets)
    if (rule.weighted()) state.records.try_emplace(source_of(rule), WeightRecord{path, H5I_INVALID_HID, {}});
  for (const auto& [key, rule] : ctx.resolution.attributes)
    if (rule.weighted())
      state.records.try_emplace(source_of(rule), WeightRecord{key.first + "@" + key.second, H5I_INVALID_HID, {}});
}

// One weight of the input being merged.
class WeightReader {
 public:
  WeightReader(const Context& ctx, Carried& carried, const WeightSource& source, WeightRecord& record)
      : ctx_(ctx), carried_(carried), source_(source), record_(record), what_(text_of(source)) {}

  Weight read(hid_t file) const {
    const std::string& path = source_.first;
    const std::string& attribute = source_.second;
    if (!object_exists(file, path))
      refuse(attribute.empty() ? "no such dataset in this input" : fmt::format("no object {} in this input", path));
    const h5::Id object = h5::open_object(file, path, ctx_.where(path));
    if (attribute.empty()) {
      if (h5::kind_of(object.get(), ctx_.where(path)) != H5I_DATASET)
        refuse(fmt::format("is a group, not a dataset: a weight is a rank-0 dataset, or an attribute \"{}@name\"",
                           path));
      return value(object.get());
    }
    if (!h5::has_attribute(object.get(), attribute, ctx_.where(path))) refuse("no such attribute in this input");
    const h5::Id attr = h5::open_attribute(object.get(), attribute, ctx_.where(path));
    return value(attr.get());
  }

 private:
  [[noreturn]] void refuse(const std::string& why) const {
    throw Error(fmt::format("{}: {}: {} (it weighs the mean of {})", ctx_.file(), what_, why, record_.used_by));
  }

  // Every link on the way exists and the last one leads to an object.
  static bool object_exists(hid_t file, const std::string& path) {
    if (path == "/") return true;
    for (std::size_t from = 1; from <= path.size();) {
      const std::size_t to = std::min(path.find('/', from), path.size());
      if (to == from) return false;
      const std::string prefix = path.substr(0, to);
      if (!h5::object_exists(file, prefix)) return false;
      from = to + 1;
    }
    return true;
  }

  // The value of a dataset or an attribute (`object`), checked.
  Weight value(hid_t object) const {
    const h5::Location at = ctx_.where(what_);
    const h5::Id type = h5::type_of(object, at);
    const h5::Id space = h5::space_of(object, at);
    const h5::SpaceInfo shape = h5::space_info(space.get(), at);
    if (shape.null_space) refuse("has a null dataspace: a weight is one number per input");
    if (!shape.dims.empty())
      refuse(fmt::format("has shape {}, not rank 0: a weight is one number per input", shape_text(shape.dims)));
    const auto kind = h5::numeric_kind(type.get());
    if (!kind)
      refuse(fmt::format("dtype {} is not a number a weight can be: an integer, or a float that float64 holds",
                         h5::dtype_name(type.get())));
    if (ctx_.first()) {
      record_.type = carried_.intern(type.get(), at);
    } else {
      check_dtype(ctx_, what_, record_.type, type.get());
    }
    const auto read = [&](hid_t mem_type, void* out) { h5::read_all(object, mem_type, out, at); };
    if (*kind == NumKind::Float) return float_weight(type.get(), read);
    if (h5::is_unsigned(type.get(), at)) {
      std::uint64_t w = 0;
      read(H5T_NATIVE_UINT64, &w);  // a widening HDF5 does exactly
      return Weight::of_integer(w);
    }
    std::int64_t w = 0;
    read(H5T_NATIVE_INT64, &w);
    if (w < 0) refuse(fmt::format("weight {} is negative", w));
    return Weight::of_integer(w);
  }

  // Read in its own type (HDF5 converts nothing) and widened exactly.
  template <typename Read>
  Weight float_weight(hid_t type, const Read& read) const {
    const auto format = h5::float_format(type);
    if (!format) throw Error("internal: a float weight without a format");
    unsigned char raw[16] = {};
    read(type, raw);
    const double w = float_bits_to_double(*format, load_float_bits(*format, raw));
    if (!std::isfinite(w)) refuse(fmt::format("weight {} is not a finite number", w));
    if (w < 0) refuse(fmt::format("weight {} is negative", w));
    return Weight::of_float(w);
  }

  const Context& ctx_;
  Carried& carried_;
  const WeightSource& source_;
  WeightRecord& record_;
  std::string what_;
};

// Added up as the accumulators do: integers exactly, floats in input order.
void check_total(const Context& ctx, const WeightSource& source, const WeightRecord& record) {
  Int128 exact = 0;
  double total = 0.0;
  for (const Weight& w : record.values) {
    exact += w.integer ? w.exact : 0;
    total += w.integer ? 0.0 : w.value;
  }
  const bool integer = record.values.front().integer;
  const std::string where = fmt::format("{}: {}", ctx.job.inputs[0].source.shown(), text_of(source));
  if (integer ? exact == 0 : total == 0.0)
    throw Error(fmt::format("{}: every input's weight is 0 ({} inputs): the weighted mean of {} needs a positive total",
                            where, record.values.size(), record.used_by));
  if (!integer && !std::isfinite(total))
    throw Error(fmt::format("{}: the weights of the {} inputs sum to more than float64 holds (the weighted mean of {})",
                            where, record.values.size(), record.used_by));
}

}  // namespace

void read_input_weights(const Context& ctx, Carried& carried, WeightState& state, hid_t file) {
  if (ctx.first()) collect_sources(ctx, state);
  for (auto& [source, record] : state.records) {
    record.values.push_back(WeightReader(ctx, carried, source, record).read(file));
    if (ctx.last()) check_total(ctx, source, record);
  }
}

const Weight& input_weight(const WeightState& state, const LeafRule& rule, std::size_t input) {
  return state.records.at(source_of(rule)).values.at(input);
}

}  // namespace mb::io::merge
