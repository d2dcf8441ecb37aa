#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "specs/emit.hpp"
#include "specs/parse.hpp"
#include "helpers.hpp"

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
  CHECK(error_of("{\"split_axis\": 0, \"x\": 1}").find("takes only \"sequence_axis\"") != std::string::npos);
  CHECK(error_of("99999999999999999999").find("out of range") != std::string::npos);
  // The message names the key that holds the wrong axis.
  CHECK(error_of("{\"split_axis\": 0, \"sequence_axis\": \"1\"}") == "s.json:1:36: \"sequence_axis\" must be an integer");
  CHECK(error_of("{\"split_axis\": \"0\"}") == "s.json:1:16: \"split_axis\" must be an integer");
  CHECK(error_of("{\"packed\": \"/cu\", \"axis\": 5000}").find("\"axis\" is out of range") != std::string::npos);
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

TEST_CASE("a packed leaf's pad: a number, or true / false for bool data, written back as it was given") {
  using mb::PadValue;
  const auto pad_of = [](const std::string& text) { return parse_spec(text, "s").leaf.pad; };
  CHECK(pad_of(R"({"packed": "/cu", "pad": -100})") == PadValue::of_integer(-100));
  CHECK(pad_of(R"({"packed": "/cu", "pad": -0.5})") == PadValue::of_number(-0.5));
  CHECK(pad_of(R"({"packed": "/cu", "pad": false})") == PadValue::of_bool(false));
  CHECK(pad_of(R"({"packed": "/cu", "pad": true})") == PadValue::of_bool(true));
  CHECK(pad_of(R"({"packed": "/cu"})") == std::nullopt);
  CHECK(error_of(R"({"packed": "/cu", "pad": "x"})") ==
        "s.json:1:26: \"pad\" takes a number (the value --cp-pad pads documents with), an integer within int64 or a "
        "finite float, or true or false for bool data");
  CHECK(error_of(R"({"packed": "/cu", "pad": null})").rfind("s.json:1:26: \"pad\" takes a number", 0) == 0);
  // The manifest holds the resolved spec: a bool pad stays a JSON boolean, and parses back the same.
  for (const PadValue pad : {PadValue::of_bool(false), PadValue::of_bool(true), PadValue::of_integer(0),
                             PadValue::of_integer(-100), PadValue::of_number(0.25)}) {
    LeafRule rule = LeafRule::packed("/cu", 0);
    rule.pad = pad;
    const auto emitted = mb::specs::rule_json(rule);
    CHECK(emitted["pad"].is_boolean() == (pad.kind == PadValue::Kind::Bool));
    CHECK(parse_spec(emitted.dump(), "s").leaf == rule);
  }
  LeafRule off = LeafRule::packed("/cu", 0);
  off.pad = PadValue::of_bool(false);
  CHECK(mb::specs::rule_json(off).dump() == R"({"packed":"/cu","axis":0,"pad":false})");
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
  CHECK(mb::specs::rule_json(LeafRule::per_sequence("/cu", 1)).dump() == R"({"per_sequence":"/cu","axis":1})");
  // The rules only merge gives (to what a split wrote beside offsets), in inspect's object form.
  LeafRule twin;
  twin.offsets = "/cu";
  twin.mode = LeafRule::Mode::PaddedOffsets;
  CHECK(mb::specs::rule_json(twin, mb::specs::RuleForm::Object).dump() ==
        R"({"mode":"padded_offsets","offsets":"/cu"})");
  twin.mode = LeafRule::Mode::RankBounds;
  CHECK(mb::specs::rule_json(twin, mb::specs::RuleForm::Object).dump() == R"({"mode":"rank_bounds","offsets":"/cu"})");
}

TEST_CASE("a spec names an attribute once, however its key is spelt") {
  CHECK_THROWS_WITH_AS(parse_spec(R"({"@a": "replicate", "@\\x61": "replicate"})", "s"),
                       doctest::Contains("names the same attribute as an earlier key"), mb::Error);
  CHECK_THROWS_WITH_AS(mb::specs::unescape_name("\\xZ1"), doctest::Contains("\\x"), mb::Error);
}

// HDF5 names in JSON: any bytes but NUL, written back exactly.
namespace {

using mb::specs::escape_name;
using mb::specs::unescape_name;

// Every name the spec language must be able to name: keywords of the spec
// language, backslashes, and bytes that are not UTF-8.
const std::vector<std::string> kOddNames = {
    "*", "@foo", "@", "split_axis", "reduce", "packed", "per_sequence", "axis", "a\\b", "\\x41", "\xff\xfe",
    "caf\xc3\xa9", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "nl\nx", "\\", "x@y", ".", "\x7f"};

mb::NodeInfo odd_tree() {
  using namespace mb::test;
  std::vector<mb::NodeInfo> members;
  for (const auto& name : kOddNames)
    if (name != "packed") members.push_back(dataset(name, {6, 2}));
  // a packed batch below a group whose name is not UTF-8, and a group called "packed"
  members.push_back(group("\xfe", {dataset("cu", {3}), dataset("tokens", {7}), dataset("@ids", {2})}));
  members.push_back(group("packed", {dataset("split_axis", {4}), dataset("*", {})}, {"*", "@x"}));
  return root(std::move(members), kOddNames);
}

mb::Resolution round_trip(const mb::NodeInfo& tree, const mb::Resolution& first) {
  const std::string emitted = mb::specs::resolved_spec_json(tree, first).dump();  // throws on invalid UTF-8
  return mb::resolve(tree, parse_spec(emitted, "emitted"), "emitted");
}

}  // namespace

TEST_CASE("names are escaped into valid UTF-8 and read back exactly") {
  CHECK(escape_name("plain/caf\xc3\xa9") == "plain/caf\xc3\xa9");
  CHECK(escape_name("\xff\xfe") == "\\xff\\xfe");
  CHECK(escape_name("a\\b") == "a\\\\b");
  CHECK(escape_name("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // an encoded surrogate is not UTF-8
  CHECK(escape_name("\xc3(") == "\\xc3(");
  CHECK(unescape_name("\\xFF\\x41\\\\") == "\xff" "A\\");
  for (const auto& name : kOddNames) {
    CHECK(unescape_name(escape_name(name)) == name);
    CHECK_NOTHROW(nlohmann::json(escape_name(name)).dump());
  }
  std::mt19937 rng(13);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string raw(rng() % 12, ' ');
    for (auto& c : raw) c = static_cast<char>(1 + rng() % 255);
    const std::string text = escape_name(raw);
    CHECK_NOTHROW(nlohmann::json(text).dump());
    CHECK(unescape_name(text) == raw);
  }
  CHECK_THROWS_WITH_AS(unescape_name("a\\b"), doctest::Contains("unknown escape \"\\b\""), mb::Error);
  CHECK_THROWS_AS(unescape_name("a\\"), mb::Error);
  CHECK_THROWS_AS(unescape_name("\\x4"), mb::Error);
  CHECK_THROWS_AS(unescape_name("\\x00"), mb::Error);
}

TEST_CASE("spec keys: keywords are read as written, names unescaped") {
  const SpecNode n = parse_spec(
      R"({"\\x2a": 1, "*": 0, "\\x40foo": 2, "@\\xfe": {"reduce": "sum"}, "@@a": {"reduce": "max"},
          "\\x73plit_axis": 3, "a\\\\b": 4, "\\xff\\xfe": 5})",
      "s");
  REQUIRE(n.kind == SpecNode::Kind::Object);
  REQUIRE(n.star);
  REQUIRE(n.members.size() == 7);
  const std::vector<std::pair<std::string, bool>> expected = {
      {"*", false},          {"@foo", false}, {"\xfe", true},      {"@a", true},
      {"split_axis", false}, {"a\\b", false}, {"\xff\xfe", false}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(n.members[i].key == expected[i].first);
    CHECK(n.members[i].attribute == expected[i].second);
  }
  CHECK(parse_spec(R"({"packed": "/\\xfe/cu"})", "s").leaf == LeafRule::packed("/\xfe/cu", 0));
  CHECK(mb::specs::member_key("*") == "\\x2a");
  CHECK(mb::specs::member_key("@x") == "\\x40x");
  CHECK(mb::specs::member_key("reduce") == "\\x72educe");
  CHECK(mb::specs::member_key("axis") == "axis");
  CHECK(mb::specs::attribute_key("*") == "@*");
  CHECK(error_of(R"({"a\\q": 0})").rfind("s.json:1:2: unknown escape \"\\q\"", 0) == 0);
  CHECK(error_of(R"({"a": 0, "\\x61": 1})").rfind("s.json:1:10: key \"\\x61\" names the same member", 0) == 0);
  CHECK(error_of(R"({"x": {"packed": "/a\\b"}})").find("unknown escape") != std::string::npos);
}

TEST_CASE("every name resolves through the emitted spec to the same rules") {
  const mb::NodeInfo tree = odd_tree();
  const std::string spec = R"({"\\xfe": {"cu": "offsets", "tokens": {"packed": "/\\xfe/cu"},
      "\\x40ids": {"per_sequence": "/\\xfe/cu"}}, "@\\xff\\xfe": {"reduce": "sum"}, "@@foo": {"reduce": "min"},
      "@*": {"reduce": "max"}, "packed": {"@*": {"reduce": "mean"}, "*": "replicate"}, "\\x2a": 1, "*": 0})";
  const mb::Resolution first = mb::resolve(tree, parse_spec(spec, "s"), "s");
  CHECK(first.dataset_rule("/\xfe/tokens") == LeafRule::packed("/\xfe/cu", 0));
  CHECK(first.dataset_rule("/\xfe/@ids") == LeafRule::per_sequence("/\xfe/cu", 0));
  CHECK(first.dataset_rule("/*") == LeafRule::split(1));
  CHECK(first.dataset_rule("/@foo") == LeafRule::split(0));
  CHECK(first.dataset_rule("/packed/split_axis") == LeafRule::replicate());
  CHECK(first.attribute_rule("/", "\xff\xfe") == LeafRule::reduce(mb::Reducer::Sum));
  CHECK(first.attribute_rule("/", "@foo") == LeafRule::reduce(mb::Reducer::Min));
  CHECK(first.attribute_rule("/packed", "*") == LeafRule::reduce(mb::Reducer::Mean));
  const mb::Resolution again = round_trip(tree, first);
  CHECK(again.datasets == first.datasets);
  CHECK(again.attributes == first.attributes);
  const mb::Resolution defaults = mb::resolve(tree, parse_spec("null", "s"), "s");
  CHECK(round_trip(tree, defaults).datasets == defaults.datasets);
}

TEST_CASE("stack and weighted-mean leaves") {
  using mb::Reducer;
  CHECK(parse_spec(R"({"reduce": "stack"})", "s").leaf == LeafRule::reduce(Reducer::Stack));
  CHECK(parse_spec(R"({"reduce": "stack"})", "s").leaf.stacks());
  CHECK(parse_spec(R"({"reduce": "mean", "weight": "/num_tokens"})", "s").leaf ==
        LeafRule::weighted_mean("/num_tokens"));
  CHECK(parse_spec(R"({"weight": "/@num_tokens", "reduce": "mean"})", "s").leaf ==
        LeafRule::weighted_mean("/", "num_tokens"));
  CHECK(parse_spec(R"({"reduce": "mean", "weight": "/g/x@n"})", "s").leaf == LeafRule::weighted_mean("/g/x", "n"));
  // "@" separates the path from the attribute; one inside a name is \x40
  CHECK(parse_spec(R"({"reduce": "mean", "weight": "/a\\x40b@c\\x40d"})", "s").leaf ==
        LeafRule::weighted_mean("/a@b", "c@d"));
  CHECK(parse_spec(R"({"reduce": "mean", "weight": "/a\\x40b"})", "s").leaf == LeafRule::weighted_mean("/a@b"));
  CHECK(LeafRule::weighted_mean("/g", "n").weight_text() == "/g@n");
  CHECK(!LeafRule::reduce(Reducer::Mean).weighted());
  // a group with a member called "weight" is still a group
  CHECK(parse_spec(R"({"weight": 0})", "s").kind == SpecNode::Kind::Object);
}

TEST_CASE("stack and weighted-mean errors name the spec, line and column") {
  CHECK(error_of(R"({"reduce": "median"})") ==
        "s.json:1:12: \"reduce\" takes \"sum\", \"mean\", \"min\", \"max\" or \"stack\"");
  CHECK(error_of(R"({"reduce": "sum", "weight": "/w"})") ==
        "s.json:1:19: \"weight\" goes with {\"reduce\": \"mean\"} only");
  CHECK(error_of(R"({"reduce": "stack", "weight": "/w"})").find("goes with {\"reduce\": \"mean\"} only") !=
        std::string::npos);
  CHECK(error_of(R"({"reduce": "mean", "weights": "/w"})").rfind(
            "s.json:1:20: a \"reduce\" leaf takes only \"weight\" besides the reducer, not \"weights\"", 0) == 0);
  for (const char* bad : {R"("w")", R"("")", R"("@n")", R"("/w@")", "3", "null", R"(["/w"])", R"("/a\\q")"})
    CHECK(error_of(std::string(R"({"reduce": "mean", "weight": )") + bad + "}").rfind("s.json:1:30: ", 0) == 0);
  CHECK(error_of(R"({"reduce": "mean", "weight": "w"})").find("absolute HDF5 path of a rank-0 dataset") !=
        std::string::npos);
}

TEST_CASE("stack and weighted means emit JSON that parses back to the same rules") {
  using mb::Reducer;
  CHECK(mb::specs::rule_json(LeafRule::reduce(Reducer::Stack)).dump() == R"({"reduce":"stack"})");
  CHECK(mb::specs::rule_json(LeafRule::weighted_mean("/", "num_tokens")).dump() ==
        R"({"reduce":"mean","weight":"/@num_tokens"})");
  CHECK(mb::specs::rule_json(LeafRule::weighted_mean("/a@b", "c@d")).dump() ==
        R"({"reduce":"mean","weight":"/a\\x40b@c\\x40d"})");
  for (auto rule : {LeafRule::reduce(Reducer::Stack), LeafRule::weighted_mean("/num_tokens"),
                    LeafRule::weighted_mean("/", "n"), LeafRule::weighted_mean("/a@b", "c@d"),
                    LeafRule::weighted_mean("/g\\h/\xff", "\\@x"), LeafRule::weighted_mean("/@", "@")})
    CHECK(parse_spec(mb::specs::rule_json(rule).dump(), "s").leaf == rule);
}

namespace {

std::string read_error(const std::string& path) {
  try {
    mb::specs::read_spec_file(path);
  } catch (const mb::Error& e) {
    return e.what();
  }
  return "(no error)";
}

struct TempSpecDir {
  std::string path;
  TempSpecDir() {
    char name[] = "/tmp/mb-spec-read-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path = name;
  }
  ~TempSpecDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("spec files: regular files and FIFOs are read, the rest refused by what it is") {
  TempSpecDir dir;
  const std::string file = dir.path + "/s.json";
  std::ofstream(file) << "{\"*\": 0}";
  CHECK(mb::specs::read_spec_file(file) == "{\"*\": 0}");
  CHECK(mb::specs::load_spec_file(file).star);

  // a FIFO (what `-s <(jq ...)` gives) is read to its end, however the writer splits its text
  const std::string fifo = dir.path + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] {
    std::ofstream out(fifo);
    out << "{\"a\":";
    out.flush();
    out << " 1}";
  });
  CHECK(mb::specs::read_spec_file(fifo) == "{\"a\": 1}");
  writer.join();

  CHECK(read_error(dir.path + "/missing.json") == dir.path + "/missing.json: cannot read the spec: no such file");
  CHECK(read_error(dir.path) == dir.path + ": cannot read the spec: it is a directory");
  CHECK(read_error("/dev/zero").find("/dev/zero: cannot read the spec: it is a character device") == 0);
  CHECK(read_error(file + "/x").find("not a directory") != std::string::npos);
  // Any other failure (a loop of symbolic links): the C library's words.
  std::filesystem::create_symlink(dir.path + "/loop-b", dir.path + "/loop-a");
  std::filesystem::create_symlink(dir.path + "/loop-a", dir.path + "/loop-b");
  CHECK(read_error(dir.path + "/loop-a") == dir.path + "/loop-a: cannot read the spec: " + std::strerror(ELOOP));
  CHECK(mb::specs::spec_file_name("-") == "<stdin>");
  CHECK(mb::specs::spec_file_name("s.json") == "s.json");
}

TEST_CASE("spec files over the size limit are refused, from a file and from a pipe") {
  TempSpecDir dir;
  const std::string big = dir.path + "/big.json";
  { std::ofstream create(big); }
  std::filesystem::resize_file(big, mb::specs::kMaxSpecBytes + 1);  // sparse: no disk used
  CHECK(read_error(big).find("larger than 256 MiB") != std::string::npos);

  // A pipe has no size: the read stops at the limit. (The writer then meets
  // a closed pipe: EPIPE, not SIGPIPE.)
  const auto previous = ::signal(SIGPIPE, SIG_IGN);
  const std::string fifo = dir.path + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    const std::string block(1 << 20, ' ');
    for (std::size_t sent = 0; sent <= mb::specs::kMaxSpecBytes; sent += block.size())
      if (::write(fd, block.data(), block.size()) < 0) break;  // EPIPE: the reader gave up
    ::close(fd);
  });
  CHECK(read_error(fifo).find(fifo + ": cannot read the spec: it is larger than 256 MiB") == 0);
  writer.join();
  ::signal(SIGPIPE, previous);
}

TEST_CASE("derived leaves: {\"max_seqlen\": path} and {\"num_tokens\": path}") {
  using mb::Quantity;
  CHECK(parse_spec(R"({"max_seqlen": "/cu_seqlens"})", "s").leaf == LeafRule::derived(Quantity::MaxSeqlen, "/cu_seqlens"));
  CHECK(parse_spec(R"({"num_tokens": "/g/cu"})", "s").leaf == LeafRule::derived(Quantity::NumTokens, "/g/cu"));
  CHECK(parse_spec(R"({"num_tokens": "/a\\x40b"})", "s").leaf.offsets == "/a@b");
  CHECK(!LeafRule::derived(Quantity::NumTokens, "/cu").cuts_rows());
  CHECK(LeafRule::derived(Quantity::NumTokens, "/cu") != LeafRule::derived(Quantity::MaxSeqlen, "/cu"));
  // members named so stay members: their specs are no paths
  for (const char* text : {R"({"num_tokens": "replicate", "cu": "offsets"})", R"({"max_seqlen": 0})",
                           R"({"max_seqlen": null, "num_tokens": {"x": 1}})", R"({"num_tokens": [1]})"}) {
    const SpecNode n = parse_spec(text, "s");
    CHECK(n.kind == SpecNode::Kind::Object);
  }
  CHECK(parse_spec(R"({"num_tokens": "replicate"})", "s").members.at(0).spec.leaf == LeafRule::replicate());
}

TEST_CASE("derived-leaf errors name the spec, line and column") {
  CHECK(error_of(R"({"max_seqlen": "/cu", "axis": 0})") ==
        "s.json:1:23: a \"max_seqlen\" leaf takes only the offsets path and \"index\", not \"axis\" (to name group "
        "members called so, give them a spec other than a path)");
  CHECK(error_of("{\n  \"num_tokens\": \"/cu\",\n  \"x\": 1\n}").rfind(
            "s.json:3:3: a \"num_tokens\" leaf takes only the offsets path and \"index\", not \"x\"", 0) == 0);
  CHECK(error_of(R"({"max_seqlen": "/a\\q"})").rfind("s.json:1:16: unknown escape", 0) == 0);
  // a relative path is a member's spec, which names no known form
  CHECK(error_of(R"({"max_seqlen": "cu_seqlens"})").rfind("s.json:1:16: unknown leaf spec \"cu_seqlens\"", 0) == 0);
  CHECK(error_of(R"({"max_seqlen": "cu_seqlens"})").find("{\"max_seqlen\": \"/offsets\"}") != std::string::npos);
}

TEST_CASE("derived leaves emit JSON that parses back to the same rules") {
  using mb::Quantity;
  CHECK(mb::specs::rule_json(LeafRule::derived(Quantity::MaxSeqlen, "/cu_seqlens")).dump() ==
        R"({"max_seqlen":"/cu_seqlens"})");
  CHECK(mb::specs::rule_json(LeafRule::derived(Quantity::NumTokens, "/g/cu")).dump() == R"({"num_tokens":"/g/cu"})");
  for (auto rule : {LeafRule::derived(Quantity::MaxSeqlen, "/cu_seqlens"), LeafRule::derived(Quantity::NumTokens, "/"),
                    LeafRule::derived(Quantity::NumTokens, "/g\\h/\xff"), LeafRule::derived(Quantity::MaxSeqlen, "/@")})
    CHECK(parse_spec(mb::specs::rule_json(rule).dump(), "s").leaf == rule);
}

TEST_CASE("rule_json: inspect's object form, one shape for every mode") {
  using mb::specs::RuleForm;
  CHECK(mb::specs::rule_json(LeafRule::split(2), RuleForm::Object).dump() == R"({"mode":"split","axis":2})");
  CHECK(mb::specs::rule_json(LeafRule::replicate(), RuleForm::Object).dump() == R"({"mode":"replicate"})");
  CHECK(mb::specs::rule_json(LeafRule::reduce(mb::Reducer::Max), RuleForm::Object).dump() ==
        R"({"mode":"reduce","reducer":"max"})");
  CHECK(mb::specs::rule_json(LeafRule::weighted_mean("/", "num_tokens"), RuleForm::Object).dump() ==
        R"({"mode":"reduce","reducer":"mean","weight":"/@num_tokens"})");
  LeafRule cp = LeafRule::split(0);
  cp.sequence_axis = 2;
  CHECK(mb::specs::rule_json(cp, RuleForm::Object).dump() == R"({"mode":"split","axis":0,"sequence_axis":2})");
  CHECK(mb::specs::rule_json(cp).dump() == R"({"split_axis":0,"sequence_axis":2})");
  CHECK(parse_spec(mb::specs::rule_json(cp).dump(), "s").leaf == cp);
  CHECK(mb::specs::rule_json(LeafRule::derived(mb::Quantity::MaxSeqlen, "/cu"), RuleForm::Object).dump() ==
        R"({"mode":"derive","quantity":"max_seqlen","offsets":"/cu"})");
}

TEST_CASE("derived leaves with an element, a split leaf's own attributes, drop") {
  const SpecNode shape = parse_spec(R"({"@shape": {"num_sequences": "/X/indptr", "index": 0}})", "s");
  LeafRule expected = LeafRule::derived(mb::Quantity::NumSequences, "/X/indptr");
  expected.element = 0;
  CHECK(shape.members.at(0).attribute);
  CHECK(shape.members.at(0).spec.leaf == expected);
  const SpecNode table = parse_spec(R"({"table": {"split_axis": 0, "@NROWS": {"num_rows": "/df/table"}}})", "s");
  const SpecNode& leaf = table.members.at(0).spec;
  CHECK(leaf.kind == SpecNode::Kind::Leaf);
  CHECK(leaf.leaf == LeafRule::split(0));
  REQUIRE(leaf.members.size() == 1);
  CHECK(leaf.members[0].key == "NROWS");
  CHECK(leaf.members[0].attribute);
  CHECK(leaf.members[0].spec.leaf == LeafRule::derived(mb::Quantity::NumRows, "/df/table"));
  CHECK(parse_spec(R"({"_i_table": "drop"})", "s").members.at(0).spec.leaf == LeafRule::drop());
  CHECK(error_of(R"({"@shape": {"num_sequences": "/X/indptr", "index": -1}})")
            .rfind("s.json:1:52: \"index\" takes the element of a 1-D attribute", 0) == 0);
}
