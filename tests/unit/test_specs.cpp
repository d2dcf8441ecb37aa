#include <doctest/doctest.h>

#include <string>

#include "core/error.hpp"
#include "specs/emit.hpp"
#include "specs/parse.hpp"

using mb::LeafRule;
using mb::SpecNode;
using mb::specs::parse_spec;

namespace {
std::string error_of(const std::string& text) {
  try {
    parse_spec(text, "s.json");
  } catch (const mb::Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("leaf forms") {
  CHECK(parse_spec("1", "s").leaf == LeafRule::split(1));
  CHECK(parse_spec("-2", "s").leaf == LeafRule::split(-2));
  CHECK(parse_spec("{\"split_axis\": 3}", "s").leaf == LeafRule::split(3));
  CHECK(parse_spec("\"replicate\"", "s").leaf == LeafRule::replicate());
  CHECK(parse_spec("{\"reduce\": \"mean\"}", "s").leaf == LeafRule::reduce(mb::Reducer::Mean));
  CHECK(parse_spec("{\"reduce\": \"max\"}", "s").leaf == LeafRule::reduce(mb::Reducer::Max));
  CHECK(parse_spec("null", "s").kind == SpecNode::Kind::Default);
}

TEST_CASE("objects, star and arrays keep their structure and positions") {
  const SpecNode n = parse_spec("{\n  \"a\": 0,\n  \"*\": \"replicate\",\n  \"seq\": [1, null]\n}", "s");
  REQUIRE(n.kind == SpecNode::Kind::Object);
  REQUIRE(n.members.size() == 2);
  CHECK(n.members[0].key == "a");
  CHECK(n.members[0].spec.pos.line == 2);
  CHECK(n.members[0].spec.pos.column == 8);
  REQUIRE(n.star);
  CHECK(n.star->leaf == LeafRule::replicate());
  CHECK(n.star->pos.line == 3);
  const SpecNode& seq = n.members[1].spec;
  REQUIRE(seq.kind == SpecNode::Kind::Array);
  REQUIRE(seq.elements.size() == 2);
  CHECK(seq.elements[0].leaf == LeafRule::split(1));
  CHECK(seq.elements[1].kind == SpecNode::Kind::Default);
  CHECK(seq.elements[1].pos.line == 4);
  CHECK(seq.elements[1].pos.column == 14);
}

TEST_CASE("errors name the spec, line and column") {
  CHECK(error_of("{\n  \"a\": 0,\n}") .rfind("s.json:3:1: ", 0) == 0);
  CHECK(error_of("{\"a\": \"cut\"}") == error_of("{\"a\": \"cut\"}"));
  CHECK(error_of("{\"a\": \"cut\"}").rfind("s.json:1:7: unknown leaf spec \"cut\"", 0) == 0);
  CHECK(error_of("{\"a\": 1.5}").rfind("s.json:1:7: a spec cannot be a fraction", 0) == 0);
  CHECK(error_of("{\"a\": true}").find("cannot be a boolean") != std::string::npos);
  CHECK(error_of("{\"a\": 1,\n \"a\": 2}").rfind("s.json:2:2: duplicate key \"a\"", 0) == 0);
  CHECK(error_of("{\"reduce\": \"median\"}").find("\"reduce\" takes") != std::string::npos);
  CHECK(error_of("{\"split_axis\": 0, \"x\": 1}").find("exactly one key") != std::string::npos);
  CHECK(error_of("99999999999999999999").find("out of range") != std::string::npos);
  CHECK(error_of("").rfind("s.json:1:1: ", 0) == 0);
  CHECK(error_of("[1] 2").find("s.json:1:5") == 0);
}

TEST_CASE("packed-sequence leaves") {
  CHECK(parse_spec("\"offsets\"", "s").leaf == LeafRule::offsets_leaf());
  CHECK(parse_spec(R"({"packed": "/cu"})", "s").leaf == LeafRule::packed("/cu", 0));
  CHECK(parse_spec(R"({"packed": "/cu", "axis": -1})", "s").leaf == LeafRule::packed("/cu", -1));
  CHECK(parse_spec(R"({"axis": 2, "packed": "/cu"})", "s").leaf == LeafRule::packed("/cu", 2));
  CHECK(parse_spec(R"({"per_sequence": "/a/cu", "axis": 1})", "s").leaf == LeafRule::per_sequence("/a/cu", 1));
  CHECK(error_of(R"({"packed": "cu"})").find("absolute HDF5 path") != std::string::npos);
  CHECK(error_of(R"({"packed": "/cu", "stride": 2})").rfind("s.json:1:19: a \"packed\" leaf takes only", 0) == 0);
  for (auto rule : {LeafRule::offsets_leaf(), LeafRule::packed("/cu", 2), LeafRule::per_sequence("/x/cu", 0)})
    CHECK(parse_spec(mb::specs::rule_json(rule).dump(), "s").leaf == rule);
}

TEST_CASE("a leaf key holding an object or array is a group member of that name") {
  const SpecNode n = parse_spec(R"({"packed": {"tokens": 0}, "reduce": [0], "x": 1})", "s");
  REQUIRE(n.kind == SpecNode::Kind::Object);
  REQUIRE(n.members.size() == 3);
  CHECK(n.members[0].key == "packed");
  CHECK(n.members[0].spec.kind == SpecNode::Kind::Object);
  CHECK(n.members[1].spec.kind == SpecNode::Kind::Array);
}

TEST_CASE("deep nesting is refused, not recursed into") {
  std::string deep(10000, '[');
  deep += std::string(10000, ']');
  CHECK(error_of(deep).find("nesting deeper than") != std::string::npos);
}

TEST_CASE("a resolved spec emits JSON that parses back to the same rules") {
  CHECK(mb::specs::rule_json(LeafRule::split(2)) == 2);
  CHECK(mb::specs::rule_json(LeafRule::replicate()) == "replicate");
  CHECK(mb::specs::rule_json(LeafRule::reduce(mb::Reducer::Sum)).dump() == "{\"reduce\":\"sum\"}");
  for (auto rule : {LeafRule::split(2), LeafRule::replicate(), LeafRule::reduce(mb::Reducer::Min)})
    CHECK(parse_spec(mb::specs::rule_json(rule).dump(), "s").leaf == rule);
}
