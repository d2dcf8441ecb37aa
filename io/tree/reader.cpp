#include "io/tree/reader.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "io/tree/storage.hpp"
#include "io/run/guard.hpp"
#include "io/h5/attributes.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/h5/links.hpp"
#include "io/h5/object.hpp"
#include "io/h5/scales.hpp"
#include "io/h5/types.hpp"
#include "io/h5/virtual.hpp"

#include "specs/dtype.hpp"

namespace mb::io::tree {
namespace {

// A shape whose element count does not fit 64 bits cannot be copied (and
// would overflow every size computed from it).
void check_element_count(const h5::SpaceInfo& s, const h5::Location& where) {
  std::uint64_t n = 1;
  for (auto d : s.dims)
    if (__builtin_mul_overflow(n, d, &n))
      throw Error(where.describe() + ": the shape has more than 2^64 elements");
}

// A one-element string or integer attribute's value as text (presets read
// it); none for any other attribute.
std::optional<std::string> attribute_text(hid_t attr, hid_t type, const h5::SpaceInfo& s, const h5::Location& at) {
  if (s.null_space || s.elements() != 1) return std::nullopt;
  const H5T_class_t cls = h5::class_of(type, at);
  if (cls == H5T_INTEGER || cls == H5T_STRING) run::note_activity(at.file, at.path);  // a read can hang on a corrupt heap
  if (cls == H5T_INTEGER) {
    const bool is_unsigned = h5::is_unsigned(type, at);
    std::uint64_t raw = 0;
    h5::read_all(attr, is_unsigned ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64, &raw, at);
    return is_unsigned ? std::to_string(raw) : std::to_string(static_cast<std::int64_t>(raw));
  }
  if (cls != H5T_STRING) return std::nullopt;
  if (h5::is_variable_string(type, at)) {
    const h5::Id memory = h5::variable_string_type(type, at);
    h5::Buffer text(memory.get());  // frees the string libhdf5 allocates
    h5::read_all(attr, memory.get(), text.prepare(1), at);
    const char* value = *static_cast<const char* const*>(text.data());
    return value ? value : "";
  }
  std::string out(h5::size_of(type, at), '\0');
  h5::read_all(attr, type, out.data(), at);
  out.resize(std::min(out.size(), out.find('\0')));
  return out;
}

// The attributes through which HDF5's dimension-scale API (netCDF-4's
// dimensions) attaches scales: object references, rebuilt in outputs.
bool dimension_scale_attribute(const std::string& name, bool of_dataset) {
  return of_dataset && (name == "DIMENSION_LIST" || name == "REFERENCE_LIST");
}

// What the tree records of each attribute (not its value). An attribute
// holding object references other than a dataset's dimension-scale
// attributes cannot be copied (a reference is an address in its own file):
// `refused` says so, naming the first such attribute.
std::vector<AttributeInfo> describe_attributes(hid_t object, const h5::Location& where, bool of_dataset,
                                               std::string& refused, Keeper* keeper = nullptr) {
  std::vector<AttributeInfo> out;
  for (const auto& name : h5::attribute_names(object, where)) {
    const h5::Location at = where.attribute(name);
    const h5::Id attr = h5::open_attribute(object, name, where);
    const h5::Id type = h5::type_of(attr.get(), at);
    const h5::Id space = h5::space_of(attr.get(), at);
    const h5::SpaceInfo s = h5::space_info(space.get(), at);
    check_element_count(s, at);
    if (h5::contains_class(type.get(), H5T_REFERENCE, at)) {
      if (keeper) keeper->discard();
      const bool scales = dimension_scale_attribute(name, of_dataset);
      if (!scales && refused.empty())
        refused = at.describe() + ": object references are not supported (only the dimension scales of netCDF-4 "
                  "and HDF5's dimension-scale API, attached through DIMENSION_LIST and REFERENCE_LIST)";
      out.push_back({name, s.dims, s.null_space, h5::dtype_name(type.get()), false, ValueType::scalar(ValueType::Kind::Opaque, 0),
                     std::nullopt, scales, true});
      continue;
    }
    ValueType value_type = h5::value_type_of(type.get(), at);  // refuses unsupported types now, not halfway through writing
    if (keeper) keeper->attribute(attr.get(), type.get(), space.get(), s, name, at);
    out.push_back({name, s.dims, s.null_space, h5::dtype_name(type.get()),
                   h5::too_large_for_a_header_message(attr.get(), type.get(), name, s.dims.size()), std::move(value_type),
                   attribute_text(attr.get(), type.get(), s, at), false, false});
  }
  return out;
}

// Which dimension scales are attached to each axis (DIMENSION_LIST), and the
// name of each axis' dimension (see NodeInfo::dimensions).
void read_scales(hid_t dataset, const h5::Location& where, NodeInfo& node) {
  // h5::is_scale is asked only about datasets whose CLASS says so (see there).
  const auto cls = std::find_if(node.attributes.begin(), node.attributes.end(),
                                [](const AttributeInfo& a) { return a.name == "CLASS"; });
  const bool says_scale = cls != node.attributes.end() && cls->text && *cls->text == "DIMENSION_SCALE";
  node.is_scale = says_scale && h5::is_scale(dataset, where);
  node.dimensions.assign(node.shape.size(), "");
  if (node.is_scale && !node.shape.empty()) node.dimensions[0] = node.name;
  const bool attached = std::any_of(node.attributes.begin(), node.attributes.end(),
                                    [](const AttributeInfo& a) { return a.dimension_scale && a.name == "DIMENSION_LIST"; });
  if (!attached) return;
  node.scales.resize(node.shape.size());
  for (unsigned axis = 0; axis < node.shape.size(); ++axis) {
    node.scales[axis] = h5::attached_scales(dataset, axis, where);
    if (!node.scales[axis].empty()) {
      const std::string& first = node.scales[axis].front();
      node.dimensions[axis] = first.substr(first.rfind('/') + 1);
    }
  }
}

void read_dataset(hid_t dataset, const h5::Location& where, NodeInfo& node, Keeper* keeper) {
  node.kind = NodeInfo::Kind::Dataset;
  const h5::Id type = h5::type_of(dataset, where);
  const h5::Id space = h5::space_of(dataset, where);
  const bool references = h5::contains_class(type.get(), H5T_REFERENCE, where);
  // refuses other unsupported types; object references are refused by read_tree, shown by inspect
  node.value_type = references ? ValueType::scalar(ValueType::Kind::Opaque, 0) : h5::value_type_of(type.get(), where);
  const h5::SpaceInfo s = h5::space_info(space.get(), where);
  check_element_count(s, where);
  node.shape = s.dims;
  node.null_space = s.null_space;
  node.dtype = h5::dtype_name(type.get());
  node.element_size = h5::size_of(type.get(), where);
  const h5::Id dcpl = h5::creation_of(dataset, where);
  node.storage = read_storage(dcpl, s, where);
  // scaleoffset quantises floats (round(x * 10^D)); decoding and re-encoding
  // an edge chunk is not idempotent, so a split or merge could not be exact.
  const bool quantised = std::find(node.storage.filters.begin(), node.storage.filters.end(), "scaleoffset") !=
                         node.storage.filters.end();
  if (quantised && h5::contains_class(type.get(), H5T_FLOAT, where))
    node.storage.unreadable = where.describe() +
                              ": filter scaleoffset is lossy on floating-point data: its chunks could not be "
                              "re-encoded exactly (rewrite the dataset without it, or with a lossless filter)";
  // libhdf5 reads a virtual dataset's sources and external storage's files
  // by name, past the remote driver: local files that happen to have those
  // names would be read instead of the remote file's. (Inputs are read
  // through the POSIX driver, or through the remote one.)
  const bool elsewhere = node.storage.layout == "virtual" || h5::external_count(dcpl.get(), where) > 0;
  if (elsewhere && !h5::descriptor_of(dataset, where))
    node.storage.unreadable = where.describe() + ": its data is stored in other files (a virtual dataset or external "
                              "storage), which cannot be read through a URL; download the files and read them locally";
  else if (node.storage.layout == "virtual") {
    try {
      h5::check_virtual_sources(dataset, where);
    } catch (const Error& e) {
      node.storage.unreadable = e.what();  // read_tree refuses it; inspect shows it
    }
  }
  std::string refused;
  if (keeper) keeper->dataset(dataset, type.get(), dcpl.get(), s, where);
  node.attributes = describe_attributes(dataset, where, true, refused, keeper);
  if (references)
    refused = where.describe() + ": datasets of object or region references are not supported (a reference is an "
              "address in its own file)";
  if (!refused.empty() && node.storage.unreadable.empty()) node.storage.unreadable = refused;
  read_scales(dataset, where, node);
}

// Groups deeper than this are refused (no batch needs it; it bounds recursion).
constexpr std::size_t kMaxGroupDepth = 512;

// Hard links can name a group many times over (a group holding two names of
// a group holding two names of ...): the tree lists every name, up to this many
// further names in all.
constexpr std::size_t kMaxFurtherNames = 1'000'000;

class TreeReader {
 public:
  TreeReader(const std::string& file_name, Keeper* keeper) : file_name_(file_name), keeper_(keeper) {}

  void read_root(hid_t root, const h5::Location& where, NodeInfo& node) {
    read_group(root, h5::hard_links(root, where).address, where, node);
  }

  // Gives every further name its first name's description (second pass:
  // every first name is then read, and met before its further names).
  void expand_further_names(NodeInfo& group, const NodeInfo& root) {
    for (auto& child : group.children) {
      if (child.is_further_name()) {
        const std::string name = child.name, path = child.path;
        child = *find(root, child.first_name);
        make_further_name(child, name, path);
      } else if (child.is_group()) {
        expand_further_names(child, root);
      }
    }
  }

 private:
  void read_group(hid_t group, haddr_t self, const h5::Location& where, NodeInfo& node) {
    if (ancestors_.size() > kMaxGroupDepth)
      throw Error(fmt::format("{}: groups nested deeper than {} levels", where.describe(), kMaxGroupDepth));
    ancestors_.push_back(self);
    node.kind = NodeInfo::Kind::Group;
    std::string refused;
    node.attributes = describe_attributes(group, where, false, refused);
    node.storage.unreadable = refused;
    std::vector<std::string> names = member_names(group, where);
    std::sort(names.begin(), names.end());  // the order every walk of the tree follows
    for (const auto& name : names) {
      const h5::Location at = where.child(name);
      run::note_activity(at.file, at.path);
      const h5::Id object = h5::open_object(group, name, at);
      NodeInfo child;
      child.name = name;
      child.path = at.path;
      read_member(object.get(), at, child);
      node.children.push_back(std::move(child));
    }
    ancestors_.pop_back();
  }

  void read_member(hid_t object, const h5::Location& at, NodeInfo& child) {
    const H5I_type_t type = h5::kind_of(object, at);
    const h5::HardLinks links = h5::hard_links(object, at);
    if (type == H5I_GROUP && std::find(ancestors_.begin(), ancestors_.end(), links.address) != ancestors_.end())
      throw Error(at.describe() + ": a hard link leads back to a group that contains it (a cycle); such a tree "
                  "cannot be split");
    // Only an object with several links can have been met before.
    if (links.count > 1) {
      auto [first, inserted] = first_names_.emplace(links.address, at.path);
      if (!inserted) {
        child.first_name = first->second;  // described in expand_further_names
        return;
      }
    }
    switch (type) {
      case H5I_GROUP: read_group(object, links.address, at, child); break;
      case H5I_DATASET: read_dataset(object, at, child, keeper_); break;
      default: throw Error(at.describe() + ": named datatypes are not supported (only groups and datasets)");
    }
  }

  const NodeInfo* find(const NodeInfo& root, const std::string& path) {
    const NodeInfo* node = &root;
    for (std::size_t begin = 1; node && begin < path.size();) {
      const std::size_t end = std::min(path.find('/', begin), path.size());
      node = node->child(path.substr(begin, end - begin));
      begin = end + 1;
    }
    if (!node) throw Error(fmt::format("internal: {}: hard link target {} is not in the tree", file_name_, path));
    return node;
  }

  // `node` is a copy of a first name's description: it becomes `path`, a
  // further name of the same object (and so do its members).
  void make_further_name(NodeInfo& node, const std::string& name, const std::string& path) {
    if (++further_names_ > kMaxFurtherNames)
      throw Error(fmt::format("{}: {}: hard links give this tree more than {} further names of its objects",
                              file_name_, path, kMaxFurtherNames));
    if (node.first_name.empty()) node.first_name = node.path;
    node.name = name;
    node.path = path;
    for (auto& c : node.children) make_further_name(c, c.name, join_path(path, c.name));
  }

  const std::string& file_name_;
  Keeper* keeper_;
  // Addresses of the groups on the path from the root to the group being
  // read: a hard link back to one of them would make the tree infinite.
  std::vector<haddr_t> ancestors_;
  // The first name met of every object with more than one link.
  std::map<haddr_t, std::string> first_names_;
  std::size_t further_names_ = 0;
};

}  // namespace

std::vector<std::string> member_names(hid_t group, const h5::Location& where) {
  std::vector<std::string> names;
  for (auto& link : h5::links_of(group, where)) {
    if (link.type != H5L_TYPE_HARD)
      throw Error(fmt::format("{}: {} links are not supported (only hard links: groups and datasets)",
                            where.child(link.name).describe(), link.type == H5L_TYPE_SOFT ? "soft" : "external"));
    names.push_back(std::move(link.name));
  }
  return names;
}

NodeInfo read_tree(hid_t file, const std::string& file_name, Keeper* keeper) {
  NodeInfo root = describe_tree(file, file_name, keeper);
  for_each_node(root, [](const NodeInfo& n) {
    if (!n.storage.unreadable.empty()) throw Error(n.storage.unreadable);
  });
  return root;
}

NodeInfo describe_tree(hid_t file, const std::string& file_name, Keeper* keeper) {
  NodeInfo root;
  root.path = "/";
  const h5::Id group = h5::open_object(file, "/", {file_name, "/"});
  TreeReader reader(file_name, keeper);
  reader.read_root(group.get(), {file_name, "/"}, root);
  reader.expand_further_names(root, root);
  return root;
}

std::string attribute_preview(hid_t file, const std::string& file_name, const std::string& object_path,
                              const std::string& name) {
  const h5::Location where{file_name, object_path};
  h5::Id object = open_object(file, object_path, where);
  const h5::AttributeValue value = read_attribute(object.get(), name, where);
  if (value.shape.null_space) return "(null)";
  const ValueType type = h5::value_type_of(value.type.get(), where);
  return format_elements(type, value.data.data(), value.shape.elements(), value.shape.dims.empty());
}

nlohmann::ordered_json attribute_json(hid_t file, const std::string& file_name, const std::string& object_path,
                                      const std::string& name) {
  const h5::Location where{file_name, object_path};
  h5::Id object = open_object(file, object_path, where);
  const h5::AttributeValue value = read_attribute(object.get(), name, where);
  if (value.shape.null_space) return nullptr;
  return specs::values_json(h5::value_type_of(value.type.get(), where), value.data.data(), value.shape.dims);
}

}  // namespace mb::io::tree
