// The pandas preset: files written by pandas' HDFStore / DataFrame.to_hdf
// through PyTables (root attribute PYTABLES_FORMAT_VERSION, groups with a
// pandas_type attribute). Its default spec cuts each stored object's rows:
// format="table" tables along axis 0 with NROWS written per piece and the
// PyTables index tables (_i_table) dropped (pandas reads a table without
// them; a cut would leave them describing the whole table);
// format="fixed" frames by their row index (axis1) and value blocks.
// Refused, with the reason: fixed-format columns stored as pickled Python
// objects (a pickle cannot be cut by rows).
#include <fmt/format.h>

#include "core/error.hpp"
#include "core/presets.hpp"

namespace mb {
namespace {
namespace pandas {  // apart from the other presets' helpers in a unity build

bool has_pandas_group(const NodeInfo& root) {
  bool found = false;
  for_each_node(root, [&](const NodeInfo& n) { found = found || (n.is_group() && has_attribute(n, "pandas_type")); });
  return found;
}

bool detect(const NodeInfo& root) {
  const std::string* cls = attribute_text(root, "CLASS");
  return has_pandas_group(root) && (has_attribute(root, "PYTABLES_FORMAT_VERSION") || (cls && *cls == "GROUP"));
}

SpecNode object_spec() {
  SpecNode n;
  n.kind = SpecNode::Kind::Object;
  return n;
}

void add(SpecNode& group, const std::string& key, SpecNode spec) { group.members.push_back({key, std::move(spec)}); }

SpecNode replicated() { return SpecNode::make_leaf(LeafRule::replicate()); }
SpecNode rows() { return SpecNode::make_leaf(LeafRule::split(0)); }

bool is_pickled(const NodeInfo& ds) {
  const std::string* atom = attribute_text(ds, "PSEUDOATOM");
  return atom && *atom == "object";
}

// format="table": the table's rows cut, NROWS per piece; index tables dropped.
SpecNode table_spec(const NodeInfo& group) {
  SpecNode out = object_spec();
  for (const auto& c : group.children) {
    if (c.name == "_i_table" || c.name.rfind("_i_", 0) == 0) {
      add(out, c.name, SpecNode::make_leaf(LeafRule::drop()));
    } else if (!c.is_group() && c.rank() >= 1 && attribute_text(c, "CLASS") && *attribute_text(c, "CLASS") == "TABLE") {
      SpecNode table = rows();
      if (has_attribute(c, "NROWS"))
        table.members.push_back({"NROWS", SpecNode::make_leaf(LeafRule::derived(Quantity::NumRows, c.path)), true});
      add(out, c.name, std::move(table));
    } else {
      add(out, c.name, replicated());
    }
  }
  return out;
}

// format="fixed": the row index (axis1 of a frame, index of a series) and
// the value blocks cut by rows; column names (axis0, blockN_items) kept.
SpecNode fixed_spec(const NodeInfo& group) {
  SpecNode out = object_spec();
  for (const auto& c : group.children) {
    if (!c.is_group() && is_pickled(c))
      throw Error(fmt::format("{}: a fixed-format column stored as pickled Python objects (PyTables VLArray, "
                              "PSEUDOATOM=object) cannot be cut by rows: write it with df.to_hdf(..., "
                              "format=\"table\")",
                              c.path));
    const bool cut = !c.is_group() && c.rank() >= 1 &&
                     (c.name == "axis1" || c.name == "index" || c.name == "values" ||
                      (c.name.rfind("block", 0) == 0 && c.name.size() > 7 &&
                       c.name.compare(c.name.size() - 7, 7, "_values") == 0));
    add(out, c.name, cut ? rows() : replicated());
  }
  return out;
}

SpecNode group_spec(const NodeInfo& group) {
  const std::string* type = attribute_text(group, "pandas_type");
  if (type) {
    if (type->size() > 6 && type->compare(type->size() - 6, 6, "_table") == 0) return table_spec(group);
    if (*type == "frame" || *type == "series") return fixed_spec(group);
    throw Error(fmt::format("{}: the pandas preset does not know pandas_type \"{}\": give a spec (-s)", group.path,
                            *type));
  }
  SpecNode out = object_spec();
  for (const auto& c : group.children) add(out, c.name, c.is_group() ? group_spec(c) : replicated());
  return out;
}

SpecNode spec(const NodeInfo& root) { return group_spec(root); }

}  // namespace pandas
}  // namespace

Preset pandas_preset() {
  return {"pandas",
          "pandas HDFStore / to_hdf (PyTables; groups with pandas_type): table rows cut with NROWS per piece and "
          "index tables (_i_table) dropped; fixed frames by rows; pickled object columns refused",
          pandas::detect, pandas::spec};
}

}  // namespace mb
