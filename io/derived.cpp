#include "io/derived.hpp"

#include <fmt/format.h>

#include "core/derived.hpp"
#include "core/error.hpp"
#include "io/h5/types.hpp"
#include "io/tree_reader.hpp"

namespace mb::io {
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
  if (!attribute.empty())
    o.attribute = h5::Id(H5Aopen(object, attribute.c_str(), H5P_DEFAULT), where, "cannot open the attribute");
  const hid_t value = o.is_attribute() ? o.attribute.get() : object;
  o.type = h5::Id(o.is_attribute() ? H5Aget_type(value) : H5Dget_type(value), where, "cannot read the datatype");
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
  if (H5Tget_class(o.type.get()) != H5T_INTEGER || H5Tget_precision(o.type.get()) > 64)
    throw Error(fmt::format("{}: a derived {} is an integer of at most 64 bits, not {}", where.describe(),
                            quantity_name(rule.quantity), h5::dtype_name(o.type.get())));
  return h5::offsets_memory_type(o.type.get(), where);  // int64 or uint64, by the sign
}

// The stored value, exact: read as int64 or uint64 by the type's sign.
StoredInteger read_stored(const Opened& o, hid_t memory, const h5::Location& where) {
  const auto read = [&](void* buffer) {
    if (o.is_attribute()) {
      h5::check(H5Aread(o.value(), memory, buffer), where, "cannot read the attribute");
    } else {
      h5::check(H5Dread(o.value(), memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer), where, "cannot read the value");
    }
  };
  if (memory == H5T_NATIVE_UINT64) {
    std::uint64_t v = 0;
    read(&v);
    return v;
  }
  std::int64_t v = 0;
  read(&v);
  return v;
}

// The offsets `file` holds at `path`, checked as every offsets dataset is.
Offsets file_offsets(hid_t file, const std::string& path, const h5::Location& where) {
  const h5::Id dataset = h5::open_object(file, path, where);
  return check_offsets(h5::read_offsets(dataset.get(), where), where.describe());
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

void check_derived_value(hid_t object, const std::string& attribute, const LeafRule& rule, const Offsets& offsets,
                         const h5::Location& where) {
  const Opened o = open_value(object, attribute, where);
  const std::string what = where.describe();
  check_stored({what, rule.quantity, rule.offsets}, read_stored(o, integer_memory_type(o, rule, where), where),
               offsets);
}

void check_derived_values(hid_t file, const std::string& file_name, const std::vector<DerivedTarget>& targets,
                          const std::map<std::string, Offsets>& offsets) {
  for (const auto& target : targets) {
    const h5::Location where{file_name, target.text()};
    const h5::Id object = h5::open_object(file, target.path, where);
    check_derived_value(object.get(), target.attribute, target.rule, offsets.at(target.rule.offsets), where);
  }
}

void write_derived_values(hid_t file, const std::string& file_name, const std::vector<DerivedTarget>& targets) {
  std::map<std::string, Offsets> offsets;  // by path, read once per file
  for (const auto& target : targets) {
    const std::string& from = target.rule.offsets;
    if (!offsets.count(from)) offsets[from] = file_offsets(file, from, {file_name, from});
    const std::uint64_t value = derive(target.rule.quantity, offsets.at(from));
    const h5::Location where{file_name, target.text()};
    const Opened o = open_target(file, target, where);
    integer_memory_type(o, target.rule, where);
    const IntegerType type{H5Tget_sign(o.type.get()) == H5T_SGN_2,
                           static_cast<unsigned>(H5Tget_precision(o.type.get())), h5::dtype_name(o.type.get())};
    check_fits(where.describe(), target.rule.quantity, value, type);
    // In range, HDF5's conversion from uint64 to any integer type is exact.
    if (o.is_attribute()) {
      h5::check(H5Awrite(o.value(), H5T_NATIVE_UINT64, &value), where, "cannot write the attribute");
    } else {
      h5::check(H5Dwrite(o.value(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value), where,
                "cannot write the value");
    }
  }
}

}  // namespace mb::io
