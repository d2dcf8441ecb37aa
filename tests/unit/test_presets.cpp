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
