#include "io/derived.hpp"

#include "core/derived.hpp"
#include "io/h5/types.hpp"
#include "io/tree_reader.hpp"

namespace mb::io {
namespace {

// The target's dataset or attribute, open, with its file datatype.
struct Opened {
  h5::Id object;
  h5::Id attribute;
  h5::Id type;
  bool is_attribute() const { return attribute.valid(); }
  hid_t value() const { return is_attribute() ? attribute.get() : object.get(); }
};

Opened open_target(hid_t file, const DerivedTarget& target, const h5::Location& where) {
  Opened o;
  o.object = h5::open_object(file, target.path, where);
  if (!target.attribute.empty())
    o.attribute = h5::Id(H5Aopen(o.object.get(), target.attribute.c_str(), H5P_DEFAULT), where,
                         "cannot open the attribute");
  o.type = h5::Id(o.is_attribute() ? H5Aget_type(o.value()) : H5Dget_type(o.value()), where,
                  "cannot read the datatype");
  return o;
}

// The stored value, exact: read as int64 or uint64 by the type's sign.
StoredInteger read_stored(const Opened& o, const h5::Location& where) {
  const hid_t memory = h5::offsets_memory_type(o.type.get(), where);  // integers of at most 64 bits
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

void check_derived_values(hid_t file, const std::string& file_name, const std::vector<DerivedTarget>& targets,
                          const std::map<std::string, Offsets>& offsets) {
  for (const auto& target : targets) {
    const h5::Location where{file_name, target.text()};
    const Opened o = open_target(file, target, where);
    const std::string what = where.describe();
    check_stored({what, target.rule.quantity, target.rule.offsets}, read_stored(o, where),
                 offsets.at(target.rule.offsets));
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
    h5::offsets_memory_type(o.type.get(), where);  // an integer of at most 64 bits
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
