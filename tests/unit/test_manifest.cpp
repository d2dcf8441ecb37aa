#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "specs/manifest.hpp"

using mb::FileLayout;
using mb::SplitOptions;
using mb::specs::Manifest;

namespace {

// A directory of its own per test, removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char name[] = "/tmp/mb-manifest-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  void write(const std::string& text) const { std::ofstream(path / "manifest.json") << text; }
  // The manifest written, read back as merge and verify read one (through a Store).
  Manifest read() const {
    std::ifstream in(path / "manifest.json");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return mb::specs::parse_manifest(text, (path / "manifest.json").string());
  }
};

Manifest sample() {
  Manifest m;
  m.tool_version = "0.1.0";
  m.source = "batch.h5";
  m.spec = {{"x", 0}, {"t", "replicate"}};
  m.options.count = 2;
  m.options.dp = {2, true};
  m.microbatches = 2;
  m.files = {{"microbatch-00000.h5", 100, "00112233445566778899aabbccddeeff"},
             {"microbatch-00001.h5", 200, "ffeeddccbbaa99887766554433221100"}};
  m.split_id = "0123456789abcdef0123456789abcdef";
  m.datasets["/x"] = {0, 8, {{{0, 2, 2}, {1, 2, 2}}, {{4, 2, 2}, {5, 2, 2}}}, {}, {}, {}};
  m.datasets["/y"] = {0, 4, {{{0, 2, 1}}, {{2, 2, 1}}}, {}, {}, {}};
  return m;
}

std::string error_of(const TempDir& dir) {
  try {
    dir.read();
  } catch (const mb::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("manifest: the split id depends on spec, options and every file record") {
  const Manifest m = sample();
  const std::string id = mb::specs::split_identity(m);
  CHECK(id == mb::specs::split_identity(sample()));
  Manifest other = sample();
  other.files[1].digest[0] = 'e';
  CHECK(mb::specs::split_identity(other) != id);
  other = sample();
  other.options.dp.align = false;
  CHECK(mb::specs::split_identity(other) != id);
  other = sample();
  other.spec["x"] = 1;
  CHECK(mb::specs::split_identity(other) != id);
}

TEST_CASE("manifest: written and read back") {
  TempDir dir;
  const Manifest m = sample();
  dir.write(mb::specs::manifest_text(m));
  const Manifest back = dir.read();
  CHECK(back.microbatches == 2);
  CHECK(back.files == m.files);
  CHECK(back.spec == m.spec);
  CHECK(back.options.count == m.options.count);
  CHECK(back.options.dp.degree == 2);
  CHECK(back.options.dp.align);
  CHECK(back.options.layout == FileLayout::PerMicrobatch);
  CHECK(back.split_id == m.split_id);
  REQUIRE(back.datasets.size() == 2);
  CHECK(back.datasets.at("/x").rows == m.datasets.at("/x").rows);  // slices read back as segments
  CHECK(back.datasets.at("/y").length == 4);
  CHECK_FALSE(back.datasets.at("/y").sequence_axis);
}

TEST_CASE("manifest: block digests from version 3, and version 2's whole-file digests still read") {
  TempDir dir;
  Manifest m = sample();
  auto j = nlohmann::json::parse(mb::specs::manifest_text(m));
  CHECK(j.at("version") == 3);
  CHECK(j.at("files").at(0).at("xxh3_128_blocks") == m.files[0].digest);
  CHECK_FALSE(j.at("files").at(0).contains("xxh3_128"));
  CHECK(mb::specs::parse_manifest(j.dump(), "m").digests == mb::specs::DigestKind::blocks);
  // A manifest of version 2, as 0.6 wrote it: read with whole-file digests, and written back the same.
  j["version"] = 2;
  for (auto& f : j.at("files")) {
    f["xxh3_128"] = f.at("xxh3_128_blocks");
    f.erase("xxh3_128_blocks");
  }
  dir.write(j.dump());
  const Manifest old = dir.read();
  CHECK(old.digests == mb::specs::DigestKind::whole_file);
  CHECK(old.files == m.files);
  const auto back = nlohmann::json::parse(mb::specs::manifest_text(old));
  CHECK(back.at("version") == 2);
  CHECK(back.at("files") == j.at("files"));
}

TEST_CASE("manifest: a dataset's sequence axis and positions, and escaped paths, read back") {
  Manifest m = sample();
  m.datasets["/x"].sequence_axis = 1;
  m.datasets["/x"].positions = {{{0, 3, 1}, {9, 3, 1}}, {{3, 6, 1}}};
  m.datasets["/a b/c"] = {1, 6, {{{0, 3, 1}}, {{3, 3, 1}}}, {}, {}, {}};
  m.datasets["/tok"] = {0, 5, {{{0, 2, 1}}, {{2, 3, 1}}}, {}, {}, {{{0, 4, 1}}, {{0, 4, 1}}}};  // --cp-pad
  TempDir dir;
  dir.write(mb::specs::manifest_text(m));
  const Manifest back = dir.read();
  REQUIRE(back.datasets.size() == 4);
  CHECK(back.datasets.at("/tok").file_rows == m.datasets.at("/tok").file_rows);
  CHECK(back.datasets.at("/tok").held(1) == 4);  // pads included
  CHECK(back.datasets.at("/x").held(1) == 4);
  CHECK(back.datasets.at("/x").sequence_axis == 1);
  CHECK(back.datasets.at("/x").positions == m.datasets.at("/x").positions);
  CHECK(back.datasets.at("/x").rows == m.datasets.at("/x").rows);
  CHECK(back.datasets.at("/a b/c").axis == 1);
  CHECK(back.datasets.at("/a b/c").rows == m.datasets.at("/a b/c").rows);
  // Each record's text is what nlohmann's compact dump gives its JSON.
  const auto& x = m.datasets.at("/x");
  const nlohmann::ordered_json entry{{"axis", x.axis},
                                     {"length", x.length},
                                     {"rows", mb::specs::row_maps_json(x.rows)},
                                     {"sequence_axis", 1},
                                     {"positions", mb::specs::row_maps_json(x.positions)}};
  CHECK(mb::specs::manifest_text(m).find("\"/x\": " + entry.dump() + ",\n") != std::string::npos);
}

TEST_CASE("manifest: one line per split dataset, slices as [start, stop, step]") {
  const std::string text = mb::specs::manifest_text(sample());
  CHECK(text.find("\n    \"/x\": {\"axis\":0,\"length\":8,\"rows\":[[[0,3,2],[1,4,2]],[[4,7,2],[5,8,2]]]}") !=
        std::string::npos);
  CHECK(text.find("\n    \"/y\": {\"axis\":0,\"length\":4,\"rows\":[[[0,2,1]],[[2,4,1]]]}\n  }\n}\n") !=
        std::string::npos);
  CHECK(nlohmann::json::parse(text).at("datasets").size() == 2);  // and it is JSON
}

TEST_CASE("manifest: the options schema round-trips every option") {
  SplitOptions o;
  o.micro_batch_size = 3;
  o.drop_last = true;
  o.on_short = mb::OnShort::Empty;
  o.dp = {4, false};
  o.balance = mb::Balance::Sequences;
  o.layout = FileLayout::PerRank;
  const auto json = mb::specs::options_json(o);
  CHECK(json.at("chunks").is_null());
  CHECK(json.at("layout") == "per-rank");
  const SplitOptions back = mb::specs::options_from_json(json);
  CHECK_FALSE(back.count);
  CHECK(back.micro_batch_size == 3);
  CHECK(back.drop_last);
  CHECK(back.on_short == mb::OnShort::Empty);
  CHECK(back.dp.degree == 4);
  CHECK(back.balance == mb::Balance::Sequences);
  CHECK(back.layout == FileLayout::PerRank);
  CHECK(mb::specs::options_from_json(nlohmann::ordered_json::object()).dp.degree == 1);  // defaults
}

TEST_CASE("manifest: pieces keep their input's extension") {
  CHECK(mb::specs::piece_extension("x.nc") == ".nc");
  CHECK(mb::specs::piece_extension("cells.h5ad") == ".h5ad");
  CHECK(mb::specs::piece_extension("a.b.hdf5") == ".hdf5");
  CHECK(mb::specs::piece_extension("batch") == ".h5");
  CHECK(mb::specs::piece_extension(".hidden") == ".h5");
  CHECK(mb::specs::piece_extension("x.") == ".h5");
  CHECK(mb::specs::piece_extension("x.way-too-long") == ".h5");
  CHECK(mb::specs::piece_extension("x.n c") == ".h5");
  mb::SplitPlan plan;
  plan.count = 2;
  plan.cp = 2;
  CHECK(mb::specs::output_file_name(plan, 1, ".nc") == "cp-00000-microbatch-00001.nc");
  for (const char* name : {"microbatch-00000.h5", "microbatch-00001.nc", "rank-00001-microbatch-00003.h5ad",
                           "cp-00001-microbatch-00000.nc", "rank-00000-cp-00001-microbatch-00002.h5"})
    CHECK(mb::specs::is_output_file_name(name));
  for (const char* name : {"microbatch-.h5", "microbatch-00000", "microbatch-00000.", "rank-microbatch-00000.h5",
                           "notes.txt", "microbatch-00000.h5.bak-x", "cp-1microbatch-00000.h5", "manifest.json"})
    CHECK_FALSE(mb::specs::is_output_file_name(name));
}

TEST_CASE("manifest: per-rank placement and file names") {
  mb::SplitPlan plan;
  plan.count = 3;
  plan.layout = FileLayout::PerRank;
  plan.ranks = 2;
  CHECK(mb::specs::output_file_name(plan, 4, ".h5") == "rank-00001-microbatch-00001.h5");
  plan.layout = FileLayout::PerMicrobatch;
  plan.ranks = 1;
  plan.count = 123456;
  CHECK(mb::specs::output_file_name(plan, 7, ".h5") == "microbatch-000007.h5");  // wide enough for the last index
  Manifest m = sample();
  m.options.layout = FileLayout::PerRank;
  m.files = {{"a.h5", 1, "a"}, {"b.h5", 1, "b"}, {"c.h5", 1, "c"}, {"d.h5", 1, "d"}};
  const auto json = nlohmann::json::parse(mb::specs::manifest_text(m));
  CHECK(json.at("placement").at(3) == nlohmann::json{{"rank", 1}, {"microbatch", 1}});
}

TEST_CASE("manifest: what is refused, naming the manifest") {
  TempDir dir;
  dir.write("{");
  CHECK(error_of(dir).find("malformed manifest") != std::string::npos);
  auto j = nlohmann::json::parse(mb::specs::manifest_text(sample()));
  auto refused = [&](nlohmann::json changed, const char* needle) {
    dir.write(changed.dump());
    const std::string error = error_of(dir);
    CHECK_MESSAGE(error.find(needle) != std::string::npos, error);
    CHECK(error.find((dir.path / "manifest.json").string()) == 0);
  };
  auto other = j;
  other["format"] = "something-else";
  refused(other, "not a microbatch manifest");
  other = j;
  other["version"] = 99;
  refused(other, "manifest version 99 is not supported");
  other = j;
  other["files"].push_back(other["files"][0]);
  refused(other, "lists 3 files for 2 microbatches of 1 ranks");
  other = j;
  other["files"][1]["name"] = "../escape.h5";
  refused(other, "is not a plain file name");
  other = j;
  other["options"]["layout"] = "sideways";
  refused(other, "options.layout is \"sideways\"");
  other = j;
  other.erase("spec");
  refused(other, "malformed manifest");
  other = j;
  other["files"][0].erase("xxh3_128_blocks");
  refused(other, "malformed manifest");
  other = j;
  other["version"] = 2;  // version 2 recorded whole-file digests, under another key
  refused(other, "malformed manifest");
  other = j;
  other["datasets"]["/x"]["rows"][0][0][2] = 0;
  refused(other, "a slice of /x is empty or falls");
  // The records are read as parse events (DatasetsReader): each shape they can be given wrong is refused.
  other = j;
  other.erase("datasets");
  refused(other, "malformed manifest: no datasets");
  other = j;
  other["datasets"]["/x"].erase("rows");
  refused(other, "dataset /x lacks its axis, length or rows");
  other = j;
  other["datasets"]["/x"].erase("length");
  refused(other, "dataset /x lacks its axis, length or rows");
  other = j;
  other["datasets"]["/x"]["rows"] = 3;
  refused(other, "dataset /x has a number where a list belongs");
  other = j;
  other["datasets"]["/x"]["rows"][0][0] = 3;
  refused(other, "dataset /x has a number where a list belongs");
  other = j;
  other["datasets"]["/x"]["rows"][0][0] = {0, 2};
  refused(other, "dataset /x has a slice that is not [start, stop, step]");
  other = j;
  other["datasets"]["/x"]["rows"][0][0][1] = "2";
  refused(other, "dataset /x has a string where a number belongs");
  other = j;
  other["datasets"]["/x"]["rows"][0][0][0] = -1;
  refused(other, "dataset /x has a negative slice bound");
  other = j;
  other["datasets"]["/x"]["axis"] = {0};
  refused(other, "dataset /x has a list for axis");
  other = j;
  other["datasets"]["/x"]["sequence_axis"] = 1;
  refused(other, "dataset /x has a sequence axis without positions or the reverse");
  other = j;
  other["datasets"]["/x"]["positions"] = other["datasets"]["/x"]["rows"];
  refused(other, "dataset /x has a sequence axis without positions or the reverse");
  other = j;
  other["datasets"]["/x"]["rows"][0][0] = nlohmann::json::object();
  refused(other, "dataset /x holds an object where a number or list belongs");
  for (const auto& [wrong, named] : std::vector<std::pair<nlohmann::json, std::string>>{
           {1.5, "a fraction"}, {true, "a boolean"}, {nullptr, "null"}}) {
    other = j;
    other["datasets"]["/x"]["rows"][0][0][1] = wrong;
    refused(other, ("dataset /x has " + named).c_str());
  }
  // Two records of one path (only text can say it twice).
  std::string twice = j.dump();
  const auto y = twice.find("\"/y\":");
  REQUIRE(y != std::string::npos);
  twice.replace(y, 5, "\"/x\":");
  dir.write(twice);
  CHECK(error_of(dir).find("dataset /x is listed twice") != std::string::npos);
}
