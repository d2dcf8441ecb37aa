#include <doctest/doctest.h>

#include "core/error.hpp"
#include "core/presets.hpp"
#include "core/resolve.hpp"
#include "helpers.hpp"
#include "specs/parse.hpp"

using namespace mb::test;
using mb::LeafRule;

namespace {

// A netCDF-4 file's tree: dimension scales time (unlimited when asked) and
// x, a variable on (x, time) and one on x only.
mb::NodeInfo netcdf_tree(bool time_unlimited) {
  mb::NodeInfo time = dataset("time", {6});
  time.is_scale = true;
  time.dimensions = {"time"};
  time.storage.max_shape = {time_unlimited ? mb::MaxDim{} : mb::MaxDim{6}};
  time.attributes.push_back({"_Netcdf4Dimid", {}, false, "int32", false, {}, std::string("1"), false, false});
  mb::NodeInfo x = dataset("x", {3});
  x.is_scale = true;
  x.dimensions = {"x"};
  x.storage.max_shape = {mb::MaxDim{3}};
  x.attributes.push_back({"_Netcdf4Dimid", {}, false, "int32", false, {}, std::string("0"), false, false});
  mb::NodeInfo t2 = dataset("t2", {3, 6});
  t2.dimensions = {"x", "time"};
  mb::NodeInfo w = dataset("w", {3});
  w.dimensions = {"x"};
  mb::NodeInfo r = root({time, x, t2, w}, {"_NCProperties"});
  return r;
}

}  // namespace

TEST_CASE("presets: names, unknown names and detection") {
  CHECK(mb::preset_names().find("netcdf") != std::string::npos);
  CHECK_NOTHROW(mb::check_preset_name("auto"));
  CHECK_NOTHROW(mb::check_preset_name("none"));
  const std::string unknown = message_of([] { mb::check_preset_name("netcfd"); });
  CHECK(unknown.find("unknown preset 'netcfd'") != std::string::npos);
  CHECK(unknown.find("netcdf") != std::string::npos);

  const mb::NodeInfo nc = netcdf_tree(false);
  CHECK(mb::pick_preset("auto", nc).preset->name == "netcdf");
  CHECK(mb::pick_preset("auto", nc).detected);
  CHECK(mb::pick_preset("none", nc).preset == nullptr);
  const mb::NodeInfo plain = root({dataset("a", {4})});
  CHECK(mb::pick_preset("auto", plain).preset == nullptr);
  CHECK(mb::pick_preset("netcdf", plain).preset->name == "netcdf");
  CHECK_FALSE(mb::pick_preset("netcdf", plain).detected);
}

TEST_CASE("presets: netcdf cuts the unlimited dimension, else the first, wherever its axis is") {
  for (const bool unlimited : {true, false}) {
    const mb::NodeInfo nc = netcdf_tree(unlimited);
    const mb::Preset& p = *mb::pick_preset("netcdf", nc).preset;
    const mb::Resolution r = mb::resolve(nc, p.spec(nc), "preset netcdf");
    if (unlimited) {
      CHECK(r.dataset_rule("/time") == LeafRule::split(0));
      CHECK(r.dataset_rule("/t2") == LeafRule::split(1));
      CHECK(r.dataset_rule("/x") == LeafRule::replicate());
      CHECK(r.dataset_rule("/w") == LeafRule::replicate());
    } else {  // x has _Netcdf4Dimid 0
      CHECK(r.dataset_rule("/x") == LeafRule::split(0));
      CHECK(r.dataset_rule("/t2") == LeafRule::split(0));
      CHECK(r.dataset_rule("/w") == LeafRule::split(0));
      CHECK(r.dataset_rule("/time") == LeafRule::replicate());
    }
  }
}

TEST_CASE("spec {\"dim\": NAME}: parsed as a leaf, resolved to the dimension's axis") {
  const mb::NodeInfo nc = netcdf_tree(false);
  const auto r = mb::resolve(nc, mb::specs::parse_spec(R"({"*": {"dim": "time"}})", "s.json"), "s.json");
  CHECK(r.dataset_rule("/t2") == LeafRule::split(1));
  CHECK(r.dataset_rule("/time") == LeafRule::split(0));
  CHECK(r.dataset_rule("/w") == LeafRule::replicate());
  // A member called "dim" still takes "replicate".
  const mb::NodeInfo member = root({dataset("dim", {4})});
  const auto m = mb::resolve(member, mb::specs::parse_spec(R"({"dim": "replicate"})", "s.json"), "s.json");
  CHECK(m.dataset_rule("/dim") == LeafRule::replicate());
  CHECK(message_of([] { mb::specs::parse_spec(R"({"dim": "time", "axis": 0})", "s.json"); })
            .find("a \"dim\" leaf takes no other key") != std::string::npos);
  mb::NodeInfo square = dataset("sq", {6, 6});
  square.dimensions = {"time", "time"};
  const mb::NodeInfo sq = root({square});
  CHECK(message_of([&] { mb::resolve(sq, mb::specs::parse_spec(R"({"dim": "time"})", "s.json"), "s.json"); })
            .find("on axes 0 and 1") != std::string::npos);
}

namespace {

mb::AttributeInfo text_attribute(const std::string& name, const std::string& value) {
  mb::AttributeInfo a;
  a.name = name;
  a.dtype = "str";
  a.text = value;
  return a;
}

void set_encoding(mb::NodeInfo& n, const std::string& type) {
  n.attributes.push_back(text_attribute("encoding-type", type));
}

mb::NodeInfo sparse(const std::string& name, const std::string& type, std::uint64_t rows, std::uint64_t nnz) {
  mb::NodeInfo m = group(name, {dataset("data", {nnz}), dataset("indices", {nnz}), dataset("indptr", {rows + 1})});
  set_encoding(m, type);
  mb::AttributeInfo shape;
  shape.name = "shape";
  shape.shape = {2};
  shape.dtype = "int64";
  m.attributes.push_back(shape);
  return m;
}

// An .h5ad file's tree: CSR X of 4 cells, obs with a categorical, var, uns.
mb::NodeInfo anndata_tree(const std::string& x_type, bool with_obsp) {
  mb::NodeInfo cat = group("cell_type", {dataset("categories", {2}), dataset("codes", {4})});
  set_encoding(cat, "categorical");
  mb::NodeInfo obs = group("obs", {dataset("_index", {4}), cat, dataset("n", {4})});
  set_encoding(obs, "dataframe");
  mb::NodeInfo var = group("var", {dataset("_index", {3})});
  mb::NodeInfo obsp = with_obsp ? group("obsp", {sparse("d", "csr_matrix", 4, 2)}) : group("obsp", {});
  mb::NodeInfo r = root({sparse("X", x_type, 4, 5), obs, obsp, group("uns", {dataset("t", {})}), var,
                         group("obsm", {dataset("pca", {4, 2})})});
  set_encoding(r, "anndata");
  return r;
}

}  // namespace

TEST_CASE("presets: anndata cuts cells, CSR by its indptr, shape[0] derived, CSC and obsp refused") {
  const mb::NodeInfo ad = anndata_tree("csr_matrix", false);
  CHECK(mb::pick_preset("auto", ad).preset->name == "anndata");
  const mb::Preset& p = *mb::pick_preset("anndata", ad).preset;
  const mb::Resolution r = mb::resolve(ad, p.spec(ad), "preset anndata");
  CHECK(r.dataset_rule("/X/indptr") == LeafRule::offsets_leaf());
  CHECK(r.dataset_rule("/X/data") == LeafRule::packed("/X/indptr", 0));
  CHECK(r.dataset_rule("/obs/_index") == LeafRule::per_sequence("/X/indptr", 0));
  CHECK(r.dataset_rule("/obs/cell_type/codes") == LeafRule::per_sequence("/X/indptr", 0));
  CHECK(r.dataset_rule("/obs/cell_type/categories") == LeafRule::replicate());
  CHECK(r.dataset_rule("/obsm/pca") == LeafRule::per_sequence("/X/indptr", 0));
  CHECK(r.dataset_rule("/var/_index") == LeafRule::replicate());
  CHECK(r.dataset_rule("/uns/t") == LeafRule::replicate());
  LeafRule shape = LeafRule::derived(mb::Quantity::NumSequences, "/X/indptr");
  shape.element = 0;
  CHECK(r.attribute_rule("/X", "shape") == shape);

  const mb::NodeInfo csc = anndata_tree("csc_matrix", false);
  CHECK(message_of([&] { p.spec(csc); }).find("/X: a CSC matrix") == 0);
  const mb::NodeInfo obsp = anndata_tree("csr_matrix", true);
  CHECK(message_of([&] { p.spec(obsp); }).find("/obsp: pairwise cell x cell data (/obsp/d)") == 0);
}

TEST_CASE("presets: pandas cuts tables with NROWS per piece and drops index tables, pickles refused") {
  mb::NodeInfo table = dataset("table", {5});
  mb::AttributeInfo nrows = text_attribute("NROWS", "5");
  nrows.dtype = "int64";
  table.attributes = {text_attribute("CLASS", "TABLE"), nrows};
  mb::NodeInfo index = group("_i_table", {group("index", {dataset("sortedLR", {9})})});
  mb::NodeInfo df = group("df", {index, table});
  df.attributes.push_back(text_attribute("pandas_type", "frame_table"));
  mb::NodeInfo r = root({df});
  r.attributes = {text_attribute("CLASS", "GROUP"), text_attribute("PYTABLES_FORMAT_VERSION", "2.1")};
  finalize(r, "");
  CHECK(mb::pick_preset("auto", r).preset->name == "pandas");
  const mb::Preset& p = *mb::pick_preset("pandas", r).preset;
  mb::Resolution res = mb::resolve(r, p.spec(r), "preset pandas");
  CHECK(res.dataset_rule("/df/table") == LeafRule::split(0));
  CHECK(res.attribute_rule("/df/table", "NROWS") == LeafRule::derived(mb::Quantity::NumRows, "/df/table"));
  CHECK(res.dataset_rule("/df/_i_table/index/sortedLR") == LeafRule::drop());
  mb::prune_dropped(r, res);
  CHECK(r.child("df")->child("_i_table") == nullptr);
  CHECK(r.child("df")->child("table") != nullptr);
  CHECK(res.datasets.count("/df/_i_table/index/sortedLR") == 0);

  mb::NodeInfo pickled = dataset("block0_values", {1});
  pickled.attributes = {text_attribute("CLASS", "VLARRAY"), text_attribute("PSEUDOATOM", "object")};
  mb::NodeInfo fixed = group("df", {dataset("axis0", {1}), dataset("axis1", {5}), pickled});
  fixed.attributes.push_back(text_attribute("pandas_type", "frame"));
  mb::NodeInfo f = root({fixed});
  f.attributes = {text_attribute("PYTABLES_FORMAT_VERSION", "2.1")};
  finalize(f, "");
  const std::string refused = message_of([&] { p.spec(f); });
  CHECK(refused.find("/df/block0_values: a fixed-format column stored as pickled Python objects") == 0);
  CHECK(refused.find("format=\"table\"") != std::string::npos);
}
