// io/tree's reader on trees built in memory with the C API (h5_memory.hpp):
// the tree it describes is the one written (paths in name order, shapes,
// dtypes, storage, attributes), and what it must refuse it refuses, naming
// the object.
#include <doctest/doctest.h>
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/tree.hpp"
#include "h5_memory.hpp"
#include "helpers.hpp"
#include "io/h5/library.hpp"
#include "io/tree/reader.hpp"

namespace {
using mb::NodeInfo;
using mb::Shape;
using mb::test::message_of;
using mb::test::h5::Held;
using mb::test::h5::make_dataset;
using mb::test::h5::memory_file;
using mb::test::h5::unique_name;

const mb::AttributeInfo* attribute(const NodeInfo& node, const std::string& name) {
  for (const auto& a : node.attributes)
    if (a.name == name) return &a;
  return nullptr;
}

std::vector<std::string> paths_in_preorder(const NodeInfo& root) {
  std::vector<std::string> out;
  mb::for_each_node(root, [&](const NodeInfo& n) { out.push_back(n.path); });
  return out;
}

hid_t make_group(hid_t loc, const std::string& name) {
  return H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
}

}  // namespace

TEST_CASE("tree: groups, datasets of several dtypes, shapes and layouts, and attributes") {
  mb::io::h5::init_library();
  const std::string name = unique_name("tree");
  Held file(memory_file(name));
  const std::int64_t version = 3;
  mb::test::h5::set_attribute(file, "version", H5T_STD_I64LE, &version);
  mb::test::h5::set_string_attribute(file, "name", "tiny");

  std::vector<std::int32_t> tokens(4 * 3);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i);
  Held t(make_dataset(file, "tokens", H5T_STD_I32LE, {4, 3}, H5T_NATIVE_INT32, tokens.data()));
  {
    Held fixed(H5Tcopy(H5T_C_S1));
    REQUIRE(H5Tset_size(fixed, 8) >= 0);
    char units[8] = "m";
    mb::test::h5::set_attribute(t, "units", fixed, units);
  }

  Held g(make_group(file, "g"));
  {
    // Chunked, gzip 4, unlimited along axis 0.
    Held dcpl(mb::test::h5::chunked({4}, 4));
    const hsize_t dims = 10, max = H5S_UNLIMITED;
    Held space(H5Screate_simple(1, &dims, &max));
    Held loss(H5Dcreate2(g, "loss", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
  }
  Held text(mb::test::h5::make_strings(g, "text", {"a", "", "ünï"}));
  const float pi = 3.25f;
  Held scalar(make_dataset(g, "scalar", H5T_IEEE_F32LE, {}, H5T_NATIVE_FLOAT, &pi));
  {
    Held compact(H5Pcreate(H5P_DATASET_CREATE));
    REQUIRE(H5Pset_layout(compact, H5D_COMPACT) >= 0);
    Held u8(make_dataset(g, "u8", H5T_STD_U8LE, {2, 2, 2}, H5I_INVALID_HID, nullptr, compact));
  }
  {
    Held null_space(H5Screate(H5S_NULL));
    Held empty(H5Dcreate2(file, "empty", H5T_STD_I16LE, null_space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  }

  const NodeInfo root = mb::io::tree::read_tree(file, name);
  CHECK(paths_in_preorder(root) ==
        std::vector<std::string>{"/", "/empty", "/g", "/g/loss", "/g/scalar", "/g/text", "/g/u8", "/tokens"});
  CHECK(root.is_group());

  REQUIRE(root.attributes.size() == 2);
  CHECK(root.attributes[0].name == "name");  // name order
  CHECK(root.attributes[0].dtype == "str");
  CHECK(root.attributes[0].text == std::optional<std::string>("tiny"));
  CHECK(root.attributes[1].name == "version");
  CHECK(root.attributes[1].dtype == "int64");
  CHECK(root.attributes[1].shape.empty());
  CHECK(root.attributes[1].text == std::optional<std::string>("3"));

  const NodeInfo* tok = root.child("tokens");
  REQUIRE(tok);
  CHECK_FALSE(tok->is_group());
  CHECK(tok->shape == Shape{4, 3});
  CHECK(tok->dtype == "int32");
  CHECK(tok->element_size == 4);
  CHECK(tok->storage.layout == "contiguous");
  CHECK(tok->storage.chunks.empty());
  CHECK(tok->storage.filters.empty());
  const auto* units = attribute(*tok, "units");
  REQUIRE(units);
  CHECK(units->dtype == "|S8");
  CHECK(units->text == std::optional<std::string>("m"));

  const NodeInfo* group = root.child("g");
  REQUIRE(group);
  CHECK(group->is_group());
  const NodeInfo* loss = group->child("loss");
  REQUIRE(loss);
  CHECK(loss->path == "/g/loss");
  CHECK(loss->shape == Shape{10});
  CHECK(loss->dtype == "float64");
  CHECK(loss->storage.layout == "chunked");
  CHECK(loss->storage.chunks == Shape{4});
  CHECK(loss->storage.filters == std::vector<std::string>{"gzip"});
  REQUIRE(loss->storage.filter_params.size() == 1);
  CHECK(loss->storage.filter_params[0].id == H5Z_FILTER_DEFLATE);
  CHECK(loss->storage.filter_params[0].cd_values == std::vector<unsigned>{4});
  REQUIRE(loss->storage.max_shape.size() == 1);
  CHECK_FALSE(loss->storage.max_shape[0].has_value());

  const NodeInfo* strings = group->child("text");
  REQUIRE(strings);
  CHECK(strings->dtype == "str");
  CHECK(strings->shape == Shape{3});
  CHECK(strings->element_size == sizeof(char*));  // a variable-length string is a pointer in memory

  const NodeInfo* s = group->child("scalar");
  REQUIRE(s);
  CHECK(s->shape.empty());
  CHECK(s->dtype == "float32");
  const NodeInfo* u8 = group->child("u8");
  REQUIRE(u8);
  CHECK(u8->shape == Shape{2, 2, 2});
  CHECK(u8->dtype == "uint8");
  CHECK(u8->storage.layout == "compact");

  const NodeInfo* empty = root.child("empty");
  REQUIRE(empty);
  CHECK(empty->null_space);
  CHECK(empty->dtype == "int16");
}

TEST_CASE("tree: a further hard link of a dataset names its first name") {
  mb::io::h5::init_library();
  const std::string name = unique_name("links");
  Held file(memory_file(name));
  const std::int64_t v[2] = {1, 2};
  { Held a(make_dataset(file, "a", H5T_STD_I64LE, {2}, H5T_NATIVE_INT64, v)); }
  { Held b(make_group(file, "b")); }
  REQUIRE(H5Lcreate_hard(file, "/a", file, "/b/alias", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  REQUIRE(H5Lcreate_hard(file, "/a", file, "/z", H5P_DEFAULT, H5P_DEFAULT) >= 0);

  const NodeInfo root = mb::io::tree::read_tree(file, name);
  CHECK(paths_in_preorder(root) == std::vector<std::string>{"/", "/a", "/b", "/b/alias", "/z"});
  const NodeInfo* a = root.child("a");
  const NodeInfo* alias = root.child("b")->child("alias");
  const NodeInfo* z = root.child("z");
  REQUIRE((a && alias && z));
  CHECK_FALSE(a->is_further_name());
  CHECK(alias->first_name == "/a");
  CHECK(z->first_name == "/a");
}

TEST_CASE("tree: soft and external links and object references are refused, naming the object") {
  mb::io::h5::init_library();
  {
    const std::string name = unique_name("soft");
    Held file(memory_file(name));
    { Held g(make_group(file, "g")); }
    REQUIRE(H5Lcreate_soft("/g", file, "/g/back", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    CHECK(message_of([&] { mb::io::tree::read_tree(file, name); }).rfind(name + ": /g/back: soft links are not supported", 0) == 0);
  }
  {
    const std::string name = unique_name("external");
    Held file(memory_file(name));
    REQUIRE(H5Lcreate_external("elsewhere.h5", "/x", file, "ext", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    CHECK(message_of([&] { mb::io::tree::read_tree(file, name); }).rfind(name + ": /ext: external links are not supported", 0) == 0);
  }
  {
    const std::string name = unique_name("reference");
    Held file(memory_file(name));
    Held d(make_dataset(file, "d", H5T_STD_I32LE, {2}));
    hobj_ref_t ref{};
    REQUIRE(H5Rcreate(&ref, file, "/d", H5R_OBJECT, -1) >= 0);
    mb::test::h5::set_attribute(d, "points_at", H5T_STD_REF_OBJ, &ref);
    CHECK(message_of([&] { mb::io::tree::read_tree(file, name); })
              .rfind(name + ": /d@points_at: object references are not supported", 0) == 0);
    // describe_tree (inspect's) keeps it, with the reason.
    const NodeInfo shown = mb::io::tree::describe_tree(file, name);
    REQUIRE(shown.child("d"));
    CHECK(shown.child("d")->storage.unreadable.find("object references are not supported") != std::string::npos);
  }
}

TEST_CASE("tree: attribute values as JSON and as previews") {
  mb::io::h5::init_library();
  const std::string name = unique_name("values");
  Held file(memory_file(name));
  Held g(make_group(file, "g"));
  const std::int32_t ints[3] = {7, -8, 9};
  {
    const hsize_t three = 3;
    Held space(H5Screate_simple(1, &three, nullptr));
    Held attr(H5Acreate2(g, "ints", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT));
    REQUIRE(H5Awrite(attr, H5T_NATIVE_INT32, ints) >= 0);
  }
  const double half = 0.5;
  mb::test::h5::set_attribute(g, "half", H5T_IEEE_F64LE, &half);
  mb::test::h5::set_string_attribute(g, "label", "tiny-llm");
  {
    Held null_space(H5Screate(H5S_NULL));
    Held attr(H5Acreate2(g, "nothing", H5T_STD_I8LE, null_space, H5P_DEFAULT, H5P_DEFAULT));
  }

  using mb::io::tree::attribute_json;
  CHECK(attribute_json(file, name, "/g", "ints") == nlohmann::ordered_json::array({7, -8, 9}));
  CHECK(attribute_json(file, name, "/g", "half") == nlohmann::ordered_json(0.5));
  CHECK(attribute_json(file, name, "/g", "label") == nlohmann::ordered_json("tiny-llm"));
  CHECK(attribute_json(file, name, "/g", "nothing").is_null());

  using mb::io::tree::attribute_preview;
  CHECK(attribute_preview(file, name, "/g", "label") == "'tiny-llm'");
  CHECK(attribute_preview(file, name, "/g", "nothing") == "(null)");
  const std::string ints_text = attribute_preview(file, name, "/g", "ints");
  CHECK(ints_text.find("-8") != std::string::npos);
  CHECK(ints_text.front() == '[');

  CHECK(message_of([&] { attribute_json(file, name, "/g", "absent"); }).rfind(name + ": /g@absent: ", 0) == 0);
}
