#include "io/tree/derived.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/derived.hpp"
#include "core/error.hpp"
#include "io/h5/object.hpp"
#include "io/h5/space.hpp"
#include "io/h5/types.hpp"
#include "io/tree/offsets.hpp"
#include "io/tree/reader.hpp"

namespace mb::io::tree {
namespace {

// The target's dataset or attribute, open, with its file datatype.
struct Opened {
  h5::Id object;
  h5::Id attribute;
  h5::Id type;
  hid_t dataset = H5I_INVALID_HID;  // not owned when `object` is not valid
  bool is_attribute() const { return attribute.valid(); }
  hid_t value() const { return is_attribute() ? attribute.get() : dataset; }
};

// The target's value in `object` (the dataset, or the attribute's holder;
// not owned), open with its file datatype.
Opened open_value(hid_t object, const std::string& attribute, const h5::Location& where) {
  Opened o;
  o.dataset = object;
  if (!attribute.empty()) {
    // `where` names the attribute ("file: /path@name"); open_attribute names it from its holder's.
    h5::Location holder = where;
    const std::string suffix = "@" + attribute;
    if (holder.path.ends_with(suffix)) holder.path.resize(holder.path.size() - suffix.size());
    o.attribute = h5::open_attribute(object, attribute, holder);
  }
  o.type = h5::type_of(o.value(), where);
  return o;
}

Opened open_target(hid_t file, const DerivedTarget& target, const h5::Location& where) {
  h5::Id object = h5::open_object(file, target.path, where);
  Opened o = open_value(object.get(), target.attribute, where);
  o.object = std::move(object);
  return o;
}

// An integer of at most 64 bits: how every derived value is stored.
hid_t integer_memory_type(const Opened& o, const LeafRule& rule, const h5::Location& where) {
  const hid_t type = o.type.get();
  if (h5::class_of(type, where) != H5T_INTEGER || h5::precision_of(type, where) > 64)
    throw Error(fmt::format("{}: a derived {} is an integer of at most 64 bits, not {}", where.describe(),
                            quantity_name(rule.quantity), h5::dtype_name(o.type.get())));
  return tree::offsets_memory_type(o.type.get(), where);  // int64 or uint64, by the sign
}

// The elements of the value (one, for rank 0), read as `memory` (int64 or
// uint64, by the type's sign), so that every value is exact.
std::vector<std::uint64_t> read_elements(const Opened& o, hid_t memory, const h5::Location& where) {
  const h5::Id space = h5::space_of(o.value(), where);
  const std::uint64_t n = h5::space_info(space.get(), where).elements();
  std::vector<std::uint64_t> values(static_cast<std::size_t>(std::max<std::uint64_t>(n, 1)));
  h5::read_all(o.value(), memory, values.data(), where);
  return values;
}

void write_elements(const Opened& o, hid_t memory, const std::vector<std::uint64_t>& values,
                    const h5::Location& where) {
  h5::write_all(o.value(), memory, values.data(), where);
}

// The derived element (the only one of a rank-0 leaf), exact.
StoredInteger read_stored(const Opened& o, const LeafRule& rule, hid_t memory, const h5::Location& where) {
  const std::vector<std::uint64_t> values = read_elements(o, memory, where);
  const std::size_t at = static_cast<std::size_t>(rule.element.value_or(0));
  if (at >= values.size())
    throw Error(fmt::format("{}: has {} elements, no element {} to derive", where.describe(), values.size(), at));
  if (memory == H5T_NATIVE_UINT64) return values[at];
  return static_cast<std::int64_t>(values[at]);
}

// The length of the dataset at `path` of `file` along axis 0 (num_rows).
std::uint64_t rows_of(hid_t file, const std::string& path, const h5::Location& where) {
  const h5::Id dataset = h5::open_object(file, path, where);
  const h5::SpaceInfo space = h5::dataset_space(dataset.get(), where);
  if (space.dims.empty())
    throw Error(fmt::format("{}: num_rows of {} needs a dataset of rank >= 1", where.describe(), path));
  return space.dims[0];
}

// The offsets `file` holds at `path`, checked as every offsets dataset is.
Offsets file_offsets(hid_t file, const std::string& path, const h5::Location& where) {
  const h5::Id dataset = h5::open_object(file, path, where);
  return check_offsets(tree::read_offsets(dataset.get(), where), where.describe());
}

}  // namespace

std::vector<DerivedTarget> derived_targets(const NodeInfo& tree, const Resolution& resolution) {
  std::vector<DerivedTarget> out;
  for_each_node(tree, [&](const NodeInfo& n) {
    if (n.is_further_name()) return;
    for (const auto& a : n.attributes) {
      const LeafRule rule = resolution.attribute_rule(n.path, a.name);
      if (rule.mode == LeafRule::Mode::Derive) out.push_back({n.path, a.name, rule});
    }
    if (!n.is_group() && resolution.dataset_rule(n.path).mode == LeafRule::Mode::Derive)
      out.push_back({n.path, {}, resolution.dataset_rule(n.path)});
  });
  return out;
}

void check_derived_value(hid_t object, const std::string& attribute, const LeafRule& rule,
                         const std::map<std::string, Offsets>& offsets, const h5::Location& where) {
  const Opened o = open_value(object, attribute, where);
  const std::string what = where.describe();
  const StoredInteger stored = read_stored(o, rule, integer_memory_type(o, rule, where), where);
  if (rule.quantity != Quantity::NumRows)
    return check_stored({what, rule.quantity, rule.offsets}, stored, offsets.at(rule.offsets));
  const h5::Id file = h5::file_of(object, where);
  check_stored({what, rule.quantity, rule.offsets}, stored, rows_of(file.get(), rule.offsets, where));
}

void check_derived_values(hid_t file, const std::string& file_name, const std::vector<DerivedTarget>& targets,
                          const std::map<std::string, Offsets>& offsets) {
  for (const auto& target : targets) {
    const h5::Location where{file_name, target.text()};
    const h5::Id object = h5::open_object(file, target.path, where);
    check_derived_value(object.get(), target.attribute, target.rule, offsets, where);
  }
}

// The value a written file's target takes: of the offsets it holds (read
// once per file, kept in `offsets`), or the rows of its dataset.
std::uint64_t written_value(hid_t file, const std::string& file_name, const LeafRule& rule,
                            std::map<std::string, Offsets>& offsets) {
  const std::string& from = rule.offsets;
  if (rule.quantity == Quantity::NumRows) return rows_of(file, from, {file_name, from});
  if (!offsets.count(from)) offsets[from] = file_offsets(file, from, {file_name, from});
  return derive(rule.quantity, offsets.at(from));
}

void write_derived_values(hid_t file, const std::string& file_name, const std::vector<DerivedTarget>& targets) {
  std::map<std::string, Offsets> offsets;  // by path, read once per file
  for (const auto& target : targets) {
    const std::uint64_t value = written_value(file, file_name, target.rule, offsets);
    const h5::Location where{file_name, target.text()};
    const Opened o = open_target(file, target, where);
    const hid_t memory = integer_memory_type(o, target.rule, where);
    const IntegerType type{!h5::is_unsigned(o.type.get(), where),
                           static_cast<unsigned>(h5::precision_of(o.type.get(), where)), h5::dtype_name(o.type.get())};
    check_fits(where.describe(), target.rule.quantity, value, type);
    // The other elements of a 1-D leaf (a shape's other sizes) are kept as
    // they are; in range, HDF5's conversion between integer types is exact.
    std::vector<std::uint64_t> values = read_elements(o, memory, where);
    values.at(static_cast<std::size_t>(target.rule.element.value_or(0))) = value;
    write_elements(o, memory, values, where);
  }
}

}  // namespace mb::io::tree
