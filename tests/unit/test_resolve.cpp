#include <doctest/doctest.h>

#include "core/error.hpp"
#include "core/resolve.hpp"
#include "helpers.hpp"
#include "specs/parse.hpp"

using namespace mb::test;
using mb::LeafRule;

namespace {

mb::NodeInfo sample_tree() {
  return root({dataset("input_ids", {8, 16}), dataset("temperature", {}),
               group("pos", {dataset("0", {3, 8, 16}), dataset("1", {3, 8, 16})}),
               group("out", {dataset("loss", {}), dataset("logits", {8, 4})}, {"tokens"})},
              {"step"});
}

mb::Resolution resolve_text(const mb::NodeInfo& tree, const std::string& text) {
  return mb::resolve(tree, mb::specs::parse_spec(text, "s.json"), "s.json");
}

std::string error_of(const mb::NodeInfo& tree, const std::string& text) {
  try {
    resolve_text(tree, text);
  } catch (const mb::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("the default spec splits rank>=1 on axis 0 and replicates rank 0") {
  const auto r = resolve_text(sample_tree(), "null");
  CHECK(r.dataset_rule("/input_ids") == LeafRule::split(0));
  CHECK(r.dataset_rule("/temperature") == LeafRule::replicate());
  CHECK(r.dataset_rule("/pos/1") == LeafRule::split(0));
  CHECK(r.attribute_rule("/", "step") == LeafRule::replicate());
  CHECK(r.datasets.size() == 6);
}

TEST_CASE("object keys, star, arrays, tree prefixes and negative axes") {
  const auto r = resolve_text(sample_tree(), R"({
    "input_ids": -1,
    "temperature": "replicate",
    "pos": [1, {"split_axis": -2}],
    "out": {"@tokens": {"reduce": "sum"}, "loss": {"reduce": "mean"}, "*": 0}
  })");
  CHECK(r.dataset_rule("/input_ids") == LeafRule::split(1));
  CHECK(r.dataset_rule("/pos/0") == LeafRule::split(1));
  CHECK(r.dataset_rule("/pos/1") == LeafRule::split(1));
  CHECK(r.dataset_rule("/out/loss") == LeafRule::reduce(mb::Reducer::Mean));
  CHECK(r.dataset_rule("/out/logits") == LeafRule::split(0));
  CHECK(r.attribute_rule("/out", "tokens") == LeafRule::reduce(mb::Reducer::Sum));

  const auto prefix = resolve_text(sample_tree(), R"({"pos": 1, "*": null})");
  CHECK(prefix.dataset_rule("/pos/0") == LeafRule::split(1));
  CHECK(prefix.dataset_rule("/pos/1") == LeafRule::split(1));
  CHECK(prefix.dataset_rule("/out/logits") == LeafRule::split(0));
}

TEST_CASE("a key that names nothing suggests the nearest member or attribute") {
  const auto tree = sample_tree();
  CHECK(error_of(tree, R"({"*": null, "input_id": 0})") ==
        "s.json:1:25: spec key \"input_id\" names nothing in the file: / has no member /input_id; did you mean "
        "\"input_ids\"?");
  CHECK(error_of(tree, R"({"*": null, "out": {"logit": 0, "*": null}})")
            .find("/out has no member /out/logit; did you mean \"logits\"?") != std::string::npos);
  CHECK(error_of(tree, R"({"*": null, "@stpe": "replicate"})")
            .find("has no attribute stpe; did you mean \"@step\"?") != std::string::npos);
  // nothing close: no suggestion
  CHECK(error_of(tree, R"({"*": null, "labels": 0})").find("did you mean") == std::string::npos);
  // a member the spec names already is not offered for another key
  const std::string named = error_of(tree, R"({"pos": 0, "temperature": "replicate", "out": null, "input_ids": 0,
                                               "input_idz": 0})");
  CHECK(named.find("spec key \"input_idz\" names nothing") != std::string::npos);
  CHECK(named.find("did you mean") == std::string::npos);
}

TEST_CASE("a misspelt leaf key suggests the key a leaf takes") {
  const auto tree = sample_tree();
  // Inside a dataset's object, where no member can be meant.
  CHECK(error_of(tree, R"({"*": null, "input_ids": {"split_axs": 0}})") ==
        "s.json:1:40: spec gives an object (a group) for /input_ids, which is a dataset (it has no member "
        "\"split_axs\"); did you mean \"split_axis\" (a leaf's key)?");
  // A misspelt key holding a word that is no spec: found as the spec is read.
  CHECK(error_of(tree, R"({"*": null, "out": {"loss": {"reduse": "mean"}, "*": null}})") ==
        "s.json:1:30: key \"reduse\" holds \"mean\", which is no member's spec: did you mean \"reduce\" (a leaf's "
        "key)?");
  CHECK(error_of(tree, R"({"*": null, "input_ids": {"packd": "/cu_seqlens"}})")
            .find("did you mean \"packed\" (a leaf's key)?") != std::string::npos);
  CHECK(error_of(tree, R"({"*": null, "input_ids": {"sequence_axs": 1, "split_axs": 0}})")
            .find("did you mean \"sequence_axis\"") != std::string::npos);
  // A leaf's key holding an object was read as a member's name: say what the key takes.
  CHECK(error_of(tree, R"({"*": null, "input_ids": {"reduce": {"op": 0}}})")
            .find("(it has no member \"reduce\"); as a leaf's key, \"reduce\" takes a number or a string, not an "
                  "object") != std::string::npos);
  // On a group (a leaf for every dataset below it), when no member is close.
  CHECK(error_of(tree, R"({"*": null, "out": {"split_axs": 0}})") ==
        "s.json:1:34: spec key \"split_axs\" names nothing in the file: /out has no member /out/split_axs; did you "
        "mean \"split_axis\" (a leaf's key)?");
  // A close member wins over a leaf's key; nothing close to either: no suggestion.
  CHECK(error_of(tree, R"({"*": null, "out": {"logit": 0, "*": null}})").find("(a leaf's key)") == std::string::npos);
  CHECK(error_of(tree, R"({"*": null, "input_ids": {"a": 0}})") ==
        "s.json:1:26: spec gives an object (a group) for /input_ids, which is a dataset");
}

TEST_CASE("a spec mistake names the HDF5 object it is at") {
  const auto where_of = [](const std::string& text) {
    try {
      resolve_text(sample_tree(), text);
    } catch (const mb::Error& e) {
      return e.where().object;
    }
    return std::string("(no error)");
  };
  CHECK(where_of(R"({"*": null, "input_ids": 5})") == "/input_ids");
  CHECK(where_of(R"({"*": null, "input_ids": {"split_axs": 0}})") == "/input_ids");
  CHECK(where_of(R"({"*": null, "out": {"logit": 0, "*": null}})") == "/out");
  CHECK(where_of(R"({"*": null, "@stpe": "replicate"})") == "/");
  CHECK(where_of(R"({"input_ids": 0})") == "/out");  // the member no key covers
  CHECK(where_of(R"({"*": null, "out": {"loss": {"reduce": "mean", "weight": "/nope"}, "*": null}})") == "/out/loss");
}

TEST_CASE("a member no key covers: the message says how to cover it") {
  CHECK(error_of(sample_tree(), R"({"input_ids": 0, "temperature": "replicate", "pos": 0})") ==
        "s.json:1:1: file member /out is not covered by the spec (no key \"out\" and no \"*\" in the object for /): "
        "add a key \"out\" for it, or \"*\": null to give every member not named the default rule");
}

TEST_CASE("strictness: every mismatch is an error naming the path and position") {
  const auto tree = sample_tree();
  CHECK(error_of(tree, R"({"input_ids": 0})").find("file member /out is not covered") != std::string::npos);
  CHECK(error_of(tree, R"({"*": null, "nope": 0})") ==
        "s.json:1:21: spec key \"nope\" names nothing in the file: / has no member /nope");
  CHECK(error_of(tree, R"({"*": null, "input_ids": 2})")
            .find("split axis 2 is out of range for /input_ids of rank 2") != std::string::npos);
  CHECK(error_of(tree, R"({"*": null, "temperature": 0})").find("cannot split /temperature") != std::string::npos);
  CHECK(error_of(tree, R"({"*": null, "pos": [0]})").find("has 1 elements, the group has 2") != std::string::npos);
  CHECK(error_of(tree, R"({"*": null, "out": [0, 0]})").find("not named 0..n-1") != std::string::npos);
  CHECK(error_of(tree, R"({"*": null, "input_ids": {"a": 0}})").find("which is a dataset") != std::string::npos);
  CHECK(error_of(tree, R"({"*": null, "@nope": "replicate"})").find("has no attribute nope") != std::string::npos);
  CHECK(error_of(tree, R"({"*": null, "@step": 0})").find("cannot be split") != std::string::npos);
  // a split leaf on a group that holds a rank-0 dataset is refused too
  CHECK(error_of(tree, R"({"*": null, "out": 0})").find("cannot split /out/loss") != std::string::npos);
}

TEST_CASE("every name of a hard-linked object needs the same rule") {
  // /b is a further name of /a; /h of the group /g (and so /h/x of /g/x), as io/tree/reader describes them.
  mb::NodeInfo tree = root({dataset("a", {6, 2}), dataset("b", {6, 2}), group("g", {dataset("x", {6})}, {"n"}),
                            group("h", {dataset("x", {6})}, {"n"})});
  tree.children[1].first_name = "/a";  // members are sorted: a, b, g, h
  tree.children[3].first_name = "/g";
  tree.children[3].children[0].first_name = "/g/x";
  CHECK(resolve_text(tree, "null").dataset_rule("/b") == LeafRule::split(0));
  CHECK(resolve_text(tree, R"({"a": 1, "b": 1, "*": null})").dataset_rule("/b") == LeafRule::split(1));
  CHECK(error_of(tree, R"({"a": 1, "*": null})") ==
        "s.json:1:15: /a and /b are one object (hard links), but the spec gives them different rules (split on axis "
        "1 vs split on axis 0): give every name of an object the same rule");
  CHECK(error_of(tree, R"({"g": {"x": "replicate"}, "*": null})").find("/g/x and /h/x are one object") !=
        std::string::npos);
  CHECK(error_of(tree, R"({"g": {"@n": {"reduce": "sum"}, "*": null}, "*": null})")
            .find("/g@n and /h@n are one object (hard links), but the spec gives them different rules (reduce sum vs "
                  "replicate)") != std::string::npos);
  // Each rule as the message names it.
  const auto rules_of = [&](const std::string& rule_of_a) {
    const std::string e = error_of(tree, R"({"a": )" + rule_of_a + R"(, "*": null})");
    const auto open = e.find("different rules (");
    return open == std::string::npos ? e : e.substr(open + 17, e.find(')', open + 17) - open - 17);
  };
  CHECK(rules_of(R"("drop")") == "drop vs split on axis 0");
  CHECK(rules_of(R"("replicate")") == "replicate vs split on axis 0");
  CHECK(rules_of(R"({"reduce": "max"})") == "reduce max vs split on axis 0");
  CHECK(rules_of(R"({"reduce": "mean", "weight": "/g@n"})") == "reduce mean weighted by /g@n vs split on axis 0");
}

TEST_CASE("stack and weighted means resolve on datasets and attributes, weights must be rank 0") {
  const auto tree = sample_tree();  // /temperature and /out/loss are rank 0; /@step and /out@tokens scalars
  const auto r = resolve_text(tree, R"({"*": null, "temperature": {"reduce": "stack"},
    "@step": {"reduce": "mean", "weight": "/out/loss"},
    "out": {"@tokens": {"reduce": "stack"}, "logits": {"reduce": "mean", "weight": "/out@tokens"}, "*": null}})");
  CHECK(r.dataset_rule("/temperature") == LeafRule::reduce(mb::Reducer::Stack));
  CHECK(r.attribute_rule("/", "step") == LeafRule::weighted_mean("/out/loss"));
  CHECK(r.attribute_rule("/out", "tokens") == LeafRule::reduce(mb::Reducer::Stack));
  CHECK(r.dataset_rule("/out/logits") == LeafRule::weighted_mean("/out", "tokens"));
  // a tree prefix gives every dataset below the same weight
  const auto prefix = resolve_text(tree, R"({"*": null, "pos": {"reduce": "mean", "weight": "/@step"}})");
  CHECK(prefix.dataset_rule("/pos/1") == LeafRule::weighted_mean("/", "step"));

  const auto weighted_by = [&](const std::string& weight) {
    return error_of(tree, R"({"*": null, "input_ids": {"reduce": "mean", "weight": ")" + weight + "\"}}");
  };
  CHECK(weighted_by("/nope") ==
        "s.json:1:26: the mean of /input_ids is weighted by /nope, but the file has no dataset /nope");
  CHECK(weighted_by("/nope@n").find("but the file has no object /nope") != std::string::npos);
  CHECK(weighted_by("/out@nope").find("is weighted by /out@nope, but /out has no attribute nope") !=
        std::string::npos);
  CHECK(weighted_by("/out").find("but /out is a group (a weight is a rank-0 dataset, or an attribute: "
                                 "\"/out@name\")") != std::string::npos);
  CHECK(weighted_by("/out/logits").find("but it has shape (8, 4) (a weight is one number per input: rank 0)") !=
        std::string::npos);
  CHECK(weighted_by("/temperature").find("no error") != std::string::npos);
  CHECK(weighted_by("/@step").find("no error") != std::string::npos);
  CHECK(error_of(tree, R"({"*": null, "@step": {"reduce": "mean", "weight": "/input_ids"}})")
            .find("the mean of /@step is weighted by /input_ids, but it has shape (8, 16)") != std::string::npos);
  // split refuses them as every reducer (test_plan); a weight of a null dataspace is refused too
  mb::NodeInfo null_tree = root({dataset("x", {4}), dataset("w", {})});
  null_tree.children[0].null_space = true;  // sorted: w, x
  CHECK(error_of(null_tree, R"({"x": {"reduce": "mean", "weight": "/w"}, "w": null})")
            .find("but it has a null dataspace") != std::string::npos);
}

TEST_CASE("derived leaves resolve on rank-0 integer datasets and attributes of an offsets leaf") {
  using mb::Quantity;
  mb::NodeInfo tree = root({dataset("cu", {5}), dataset("tokens", {20}), dataset("max_seqlen", {}),
                            dataset("ratio", {}), group("g", {dataset("n", {})}, {"len"})},
                           {"step", "name"});
  for (auto& c : tree.children)
    if (c.name == "ratio") c.dtype = "float32";
  for (auto& a : tree.attributes)
    if (a.name == "name") a.dtype = "|S4";
  const std::string base = R"("cu": "offsets", "tokens": {"packed": "/cu"}, "ratio": "replicate", )";
  const auto r = resolve_text(tree, "{" + base + R"("max_seqlen": {"max_seqlen": "/cu"},
    "@step": {"num_tokens": "/cu"}, "g": {"@len": {"max_seqlen": "/cu"}, "n": {"num_tokens": "/cu"}}})");
  CHECK(r.dataset_rule("/max_seqlen") == LeafRule::derived(Quantity::MaxSeqlen, "/cu"));
  CHECK(r.dataset_rule("/g/n") == LeafRule::derived(Quantity::NumTokens, "/cu"));
  CHECK(r.attribute_rule("/", "step") == LeafRule::derived(Quantity::NumTokens, "/cu"));
  CHECK(r.attribute_rule("/g", "len") == LeafRule::derived(Quantity::MaxSeqlen, "/cu"));
  CHECK(r.attribute_rule("/", "name") == LeafRule::replicate());

  // {"KEY": VALUE, the other keys of a good spec, "*": null}: the leaf's object starts after "KEY": .
  const auto with = [&](const std::string& key, const std::string& value) {
    std::string text = "{\"" + key + "\": " + value;
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"cu", "\"offsets\""}, {"tokens", R"({"packed": "/cu"})"}, {"ratio", "\"replicate\""}})
      if (k != key) text += ", \"" + k + "\": " + v;
    return error_of(tree, text + ", \"*\": null}");
  };
  CHECK(with("max_seqlen", R"({"max_seqlen": "/tokens"})") ==
        "s.json:1:16: /max_seqlen names /tokens as its offsets, but its spec is not \"offsets\"");
  CHECK(with("max_seqlen", R"({"max_seqlen": "/nope"})") ==
        "s.json:1:16: /max_seqlen names /nope as its offsets, but the file has no dataset there");
  CHECK(with("tokens", R"({"num_tokens": "/cu"})") ==
        "s.json:1:12: \"num_tokens\" needs a rank-0 integer (one value per file); /tokens has shape (20,)");
  CHECK(with("ratio", R"({"num_tokens": "/cu"})") == "s.json:1:11: \"num_tokens\" needs a rank-0 integer; /ratio is float32");
  CHECK(with("@name", R"({"max_seqlen": "/cu"})") == "s.json:1:11: \"max_seqlen\" needs a rank-0 integer; /@name is |S4");
  CHECK(with("@step", R"({"max_seqlen": "/g/n"})") ==
        "s.json:1:11: /@step names /g/n as its offsets, but its spec is not \"offsets\"");
  CHECK(with("@step", R"({"max_seqlen": "/cu"})") == "(no error)");
}
