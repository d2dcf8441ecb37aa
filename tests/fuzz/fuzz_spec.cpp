// libFuzzer target: spec text -> parse -> resolve against a fixed tree ->
// plan. Checks one property beyond "no crash": a resolved spec, emitted as
// JSON and parsed again, resolves to exactly the same rules.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../unit/helpers.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/resolve.hpp"
#include "specs/emit.hpp"
#include "specs/parse.hpp"

namespace {

// A tree with every shape of member the spec language addresses: groups, a
// sequence group, rank 0..3 datasets, attributes, and a packed batch.
const mb::NodeInfo& tree() {
  using namespace mb::test;
  static const mb::NodeInfo t = root(
      {dataset("ids", {8, 16}), dataset("scalar", {}), dataset("cols", {4, 8}),
       group("pos", {dataset("0", {3, 8, 16}), dataset("1", {8, 2})}, {"n"}),
       group("packed", {dataset("tokens", {10}), dataset("cu", {5}), dataset("doc", {4})}),
       group("empty", {})},
      {"step", "name"});
  return t;
}

const mb::OffsetsValues& offsets() {  // signed, as an int32 dataset reads
  static const mb::OffsetsValues v{{"/packed/cu", std::vector<std::int64_t>{0, 1, 7, 8, 10}}};
  return v;
}

void plan_all_ways(const mb::Resolution& r) {
  for (std::uint64_t n : {1, 3, 9})
    for (auto on_short : {mb::OnShort::Error, mb::OnShort::Downsize, mb::OnShort::Empty}) {
      try {
        mb::plan_split(tree(), r, {n, std::nullopt, on_short, {}}, offsets());
      } catch (const mb::Error&) {
      }
    }
  try {
    mb::plan_split(tree(), r, {std::nullopt, 3, mb::OnShort::Error, {2, true}}, offsets());
  } catch (const mb::Error&) {
  }
}

// Names the spec language must escape: its keywords as member names, a
// backslash, bytes that are not UTF-8 (members, attributes, an offsets path).
const mb::NodeInfo& odd_tree() {
  using namespace mb::test;
  static const mb::NodeInfo t = root(
      {dataset("*", {4}), dataset("@x", {4, 2}), dataset("split_axis", {4}), dataset("reduce", {}),
       dataset("a\\b", {4}), dataset("\xff", {4}),
       group("packed", {dataset("cu", {3}), dataset("tokens", {6}), dataset("per_sequence", {2})}, {"\xfe", "*"})},
      {"@y", "\xc3"});
  return t;
}

// A spec that resolves against `t` must emit JSON that resolves again to
// exactly the same rules.
void check_round_trip(const mb::NodeInfo& t, std::string_view text) {
  mb::Resolution first;
  try {
    first = mb::resolve(t, mb::specs::parse_spec(text, "fuzz.json"), "fuzz.json");
  } catch (const mb::Error&) {
    return;
  }
  if (&t == &tree()) plan_all_ways(first);
  const std::string emitted = mb::specs::resolved_spec_json(t, first).dump();
  const mb::Resolution again = mb::resolve(t, mb::specs::parse_spec(emitted, "emitted"), "emitted");
  if (again.datasets != first.datasets || again.attributes != first.attributes) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_round_trip(tree(), text);
  check_round_trip(odd_tree(), text);
  return 0;
}
