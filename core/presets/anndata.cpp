// The AnnData preset: .h5ad files (anndata.write_h5ad) carry
// encoding-type="anndata" on the root group. Their default spec cuts the
// cells (obs): X, layers and obsm along their rows, a CSR matrix by its
// indptr (the rows' offsets) with shape[0] derived per file; with a CSR
// matrix, every other per-cell dataset is cut per sequence of the first
// one's indptr, so that all take the same (token-balanced) rows; the obs
// dataframe's columns (categoricals: codes cut, categories replicated);
// var, varm, varp and uns are the same in every piece. Refused, with the
// reason: a CSC matrix among the cut ones (its rows cannot be cut) and a
// non-empty obsp (cell x cell: its pairs span pieces).
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/presets.hpp"

namespace mb {
namespace {
namespace anndata {  // apart from the other presets' helpers in a unity build

bool detect(const NodeInfo& root) {
  const std::string* type = attribute_text(root, "encoding-type");
  return type && *type == "anndata";
}

std::string encoding_of(const NodeInfo& node) {
  const std::string* type = attribute_text(node, "encoding-type");
  return type ? *type : std::string();
}

SpecNode object_spec() {
  SpecNode n;
  n.kind = SpecNode::Kind::Object;
  return n;
}

void add(SpecNode& group, const std::string& key, SpecNode spec, bool attribute = false) {
  group.members.push_back({key, std::move(spec), attribute});
}

SpecNode replicated() { return SpecNode::make_leaf(LeafRule::replicate()); }

bool is_csr(const NodeInfo& node) { return node.is_group() && encoding_of(node) == "csr_matrix"; }

// The indptr of the first CSR matrix whose rows are cells (X, then layers,
// obsm, raw/X), or "" when none is: the rows every per-cell dataset follows.
std::string cell_offsets(const NodeInfo& root) {
  std::vector<const NodeInfo*> cut;
  if (const NodeInfo* x = root.child("X")) cut.push_back(x);
  for (const char* group : {"layers", "obsm"})
    if (const NodeInfo* g = root.child(group))
      for (const auto& c : g->children) cut.push_back(&c);
  if (const NodeInfo* raw = root.child("raw"))
    if (const NodeInfo* x = raw->child("X")) cut.push_back(x);
  for (const NodeInfo* n : cut)
    if (is_csr(*n) && n->child("indptr")) return join_path(n->path, "indptr");
  return {};
}

// The spec of one file, built from its tree: `cells` is what every
// per-cell dataset follows (cell_offsets).
class Builder {
 public:
  explicit Builder(std::string cells) : cells_(std::move(cells)) {}

  // A CSR matrix: its rows are indptr's sequences, data and indices packed
  // along them; shape[0] is each piece's row count.
  SpecNode csr_spec(const NodeInfo& matrix) const {
    const std::string indptr = join_path(matrix.path, "indptr");
    SpecNode out = object_spec();
    add(out, "indptr", SpecNode::make_leaf(LeafRule::offsets_leaf()));
    add(out, "data", SpecNode::make_leaf(LeafRule::packed(indptr, 0)));
    add(out, "indices", SpecNode::make_leaf(LeafRule::packed(indptr, 0)));
    LeafRule shape = LeafRule::derived(Quantity::NumSequences, indptr);
    shape.element = 0;
    add(out, "shape", SpecNode::make_leaf(shape), true);
    return out;
  }

  // A dataframe cut by rows: every column (and _index) along axis 0, a
  // categorical's codes cut and its categories replicated.
  SpecNode dataframe_spec(const NodeInfo& frame) const {
    SpecNode out = object_spec();
    for (const auto& c : frame.children) {
      if (!c.is_group()) {
        add(out, c.name, c.rank() == 0 ? replicated() : rows());
      } else if (encoding_of(c) == "categorical") {
        SpecNode cat = object_spec();
        for (const auto& part : c.children) add(cat, part.name, part.name == "categories" ? replicated() : rows());
        add(out, c.name, std::move(cat));
      } else {
        add(out, c.name, rows());  // nullable arrays: values and mask, both per row
      }
    }
    return out;
  }

  // One element of X, layers, obsm or raw cut by rows.
  SpecNode cut_spec(const NodeInfo& node) const {
    if (!node.is_group()) return node.rank() == 0 ? replicated() : rows();
    const std::string type = encoding_of(node);
    if (type == "csr_matrix") return csr_spec(node);
    if (type == "dataframe") return dataframe_spec(node);
    if (type == "csc_matrix")
      throw Error(fmt::format("{}: a CSC matrix (compressed by column) cannot be cut by rows (cells): store it as CSR "
                              "(adata.X = adata.X.tocsr()), or write a spec that cuts the columns (var) instead",
                              node.path));
    throw Error(fmt::format("{}: the anndata preset does not know how to cut an element of encoding-type \"{}\" by "
                            "rows: give a spec (-s)",
                            node.path, type));
  }

  // A group of elements each cut by rows (layers, obsm).
  SpecNode each_cut(const NodeInfo& group) const {
    SpecNode out = object_spec();
    for (const auto& c : group.children) add(out, c.name, cut_spec(c));
    return out;
  }

  SpecNode raw_spec(const NodeInfo& raw) const {
    SpecNode out = object_spec();
    for (const auto& c : raw.children) add(out, c.name, c.name == "X" ? cut_spec(c) : replicated());
    return out;
  }

  SpecNode member_spec(const NodeInfo& node) const {
    const std::string& name = node.name;
    if (name == "X") return cut_spec(node);
    if (name == "obs") return dataframe_spec(node);
    if (name == "layers" || name == "obsm") return each_cut(node);
    if (name == "raw") return raw_spec(node);
    if (name == "obsp" && !node.children.empty())
      throw Error(fmt::format("{}: pairwise cell x cell data ({}) cannot be cut by cells: a pair may span two "
                              "microbatches; delete it (del adata.obsp[...]) before splitting, or give a spec (-s)",
                              node.path, node.children.front().path));
    return replicated();  // var, varm, varp, uns and anything else: the same in every piece
  }

  SpecNode file_spec(const NodeInfo& root) const {
    SpecNode out = object_spec();
    for (const auto& c : root.children) add(out, c.name, member_spec(c));
    return out;
  }

 private:
  // One row per cell: along axis 0, or per sequence of the cells' indptr.
  SpecNode rows() const {
    return SpecNode::make_leaf(cells_.empty() ? LeafRule::split(0) : LeafRule::per_sequence(cells_, 0));
  }

  std::string cells_;
};

SpecNode spec(const NodeInfo& root) { return Builder(cell_offsets(root)).file_spec(root); }

}  // namespace anndata
}  // namespace

Preset anndata_preset() {
  return {"anndata",
          "AnnData .h5ad (root encoding-type \"anndata\"): cells (obs) cut; X, layers, obsm by rows (CSR by indptr, "
          "shape per piece); obs columns, categorical codes; var, varm, varp, uns replicated; CSC and obsp refused",
          anndata::detect, anndata::spec};
}

}  // namespace mb
