#include "specs/parse.hpp"

#include <algorithm>
#include <unordered_set>

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/suggest.hpp"
#include "specs/json_tree.hpp"

namespace mb::specs {
namespace {

// ": did you mean \"replicate\"?" for a misspelt leaf word, as for keys and options.
std::string leaf_word_hint(const std::string& word) {
  const auto near = nearest(word, {"replicate", "offsets", "drop"});
  return near ? fmt::format(": did you mean \"{}\"?", *near) : std::string();
}

class Converter {
 public:
  explicit Converter(const JsonTree& b) : b_(b) {}

  SpecNode convert(const JNode& j) const {
    SpecNode n = convert_value(j);
    n.pos = j.pos;
    return n;
  }

 private:
  SpecNode convert_value(const JNode& j) const {
    switch (j.type) {
      case JNode::Type::Null: return SpecNode::make_default();
      case JNode::Type::Integer: return SpecNode::make_leaf(LeafRule::split(axis_of(j)));
      case JNode::Type::String:
        if (j.text == "replicate") return SpecNode::make_leaf(LeafRule::replicate());
        if (j.text == "offsets") return SpecNode::make_leaf(LeafRule::offsets_leaf());
        if (j.text == "drop") return SpecNode::make_leaf(LeafRule::drop());
        b_.fail(j.pos, fmt::format("unknown leaf spec \"{}\"{} (expected an axis, \"replicate\", \"offsets\", \"drop\", "
                                   "{{\"split_axis\": k}}, {{\"reduce\": ...}}, {{\"packed\": ...}}, "
                                   "{{\"per_sequence\": ...}}, {{\"max_seqlen\": \"/offsets\"}}, {{\"num_tokens\": \"/offsets\"}}, "
                                   "{{\"num_sequences\": \"/offsets\"}}, {{\"num_rows\": \"/table\"}}, null, "
                                   "an object or an array)",
                                   j.text, leaf_word_hint(j.text)));
      case JNode::Type::Object: return is_leaf_object(j) ? leaf_object(j) : group_object(j);
      case JNode::Type::Array: {
        SpecNode n;
        n.kind = SpecNode::Kind::Array;
        for (const auto& item : j.items) n.elements.push_back(convert(item));
        return n;
      }
      case JNode::Type::Bool:
      case JNode::Type::Float: break;
    }
    b_.fail(j.pos, fmt::format("a spec cannot be a {} (expected an axis, \"replicate\", {{\"split_axis\": k}}, "
                               "{{\"reduce\": ...}}, null, an object or an array)",
                               j.type == JNode::Type::Bool ? "boolean" : "fraction"));
  }

  // `key`: the key that holds the axis, for the message ("" for a bare integer).
  int axis_of(const JNode& j, const std::string& key = "") const {
    const std::string what = key.empty() ? std::string("a split axis") : fmt::format("\"{}\"", key);
    if (j.type != JNode::Type::Integer) b_.fail(j.pos, what + " must be an integer");
    if (!j.integer_fits || j.integer < -1024 || j.integer > 1024)
      b_.fail(j.pos, what + " is out of range (HDF5 datasets have at most 32 dimensions)");
    return static_cast<int>(j.integer);
  }

  // {"split_axis": k}, {"reduce": op}, {"packed": path} and
  // {"per_sequence": path} are leaves; any other object is a group. A leaf
  // key holding an object or array is a group member of that name (a group
  // called "packed", say), so that every resolved spec parses back.
  static bool is_leaf_key(const std::string& k) {
    return k == "split_axis" || k == "reduce" || k == "packed" || k == "per_sequence";
  }

  // {"max_seqlen": "/offsets"}, {"num_tokens": "/offsets"}, {"num_sequences":
  // "/offsets"} and {"num_rows": "/table"}: those are
  // common member names ({"num_tokens": "replicate"} is a group's member),
  // so they make a leaf only with an absolute path, which no member's spec is.
  static const Quantity* derived_quantity(const std::string& k, const JNode& value) {
    static const Quantity quantities[] = {Quantity::MaxSeqlen, Quantity::NumTokens, Quantity::NumSequences,
                                          Quantity::NumRows};
    if (value.type != JNode::Type::String || value.text.empty() || value.text[0] != '/') return nullptr;
    for (const auto& q : quantities)
      if (k == quantity_name(q)) return &q;
    return nullptr;
  }

  // {"dim": "time"}: a member called "dim" can only hold "replicate" or
  // "offsets" as a string, so any other string makes the dimension leaf.
  static bool is_dim_entry(const std::string& k, const JNode& value) {
    return k == "dim" && value.type == JNode::Type::String && value.text != "replicate" && value.text != "offsets";
  }

  static bool is_leaf_entry(const JNode& j, std::size_t i) {
    if (derived_quantity(j.keys[i], j.values[i]) || is_dim_entry(j.keys[i], j.values[i])) return true;
    return is_leaf_key(j.keys[i]) && j.values[i].type != JNode::Type::Object && j.values[i].type != JNode::Type::Array;
  }

  static bool is_leaf_object(const JNode& j) {
    for (std::size_t i = 0; i < j.keys.size(); ++i)
      if (is_leaf_entry(j, i)) return true;
    return false;
  }

  SpecNode leaf_object(const JNode& j) const {
    std::size_t at = 0;
    while (!is_leaf_entry(j, at)) ++at;
    const std::string& key = j.keys[at];
    if (const Quantity* q = derived_quantity(key, j.values[at])) return derived_leaf(j, at, *q);
    if (key == "packed" || key == "per_sequence") return sequence_leaf(j, at);
    if (key == "reduce") return reduce_leaf(j, at);
    if (key == "dim") return dim_leaf(j, at);
    return split_leaf(j, at);
  }

  // {"dim": "time"}: cut along the axis of that dimension, wherever it is;
  // datasets without it are replicated.
  SpecNode dim_leaf(const JNode& j, std::size_t at) const {
    if (j.keys.size() != 1)
      b_.fail(j.key_pos[at == 0 ? 1 : 0], "a \"dim\" leaf takes no other key (it names the dimension to cut)");
    if (j.values[at].text.empty()) b_.fail(j.values[at].pos, "\"dim\" needs a dimension's name");
    return SpecNode::make_leaf(LeafRule::split_dim(j.values[at].text));
  }

  // {"split_axis": k} and {"split_axis": k, "sequence_axis": s}; "@name"
  // keys give the dataset's own attributes a spec (PyTables' NROWS:
  // {"split_axis": 0, "@NROWS": {"num_rows": "/df/table"}}).
  SpecNode split_leaf(const JNode& j, std::size_t at) const {
    LeafRule rule = LeafRule::split(axis_of(j.values[at], "split_axis"));
    std::vector<SpecMember> attributes;
    for (std::size_t i = 0; i < j.keys.size(); ++i) {
      if (i == at) continue;
      if (j.keys[i].size() > 1 && j.keys[i][0] == '@') {
        const std::string name = name_at(j.keys[i].substr(1), j.key_pos[i]);
        for (const auto& a : attributes)
          if (a.key == name)
            b_.fail(j.key_pos[i], fmt::format("key \"{}\" names the same attribute as an earlier key",
                                              printable(j.keys[i])));
        attributes.push_back({name, convert(j.values[i]), true});
        continue;
      }
      if (j.keys[i] != "sequence_axis")
        b_.fail(j.key_pos[i], fmt::format("a \"split_axis\" leaf takes only \"sequence_axis\" besides the axis, not "
                                          "\"{}\" (to name group members called so, they cannot be mixed with "
                                          "\"split_axis\")",
                                          printable(j.keys[i])));
      rule.sequence_axis = axis_of(j.values[i], "sequence_axis");
    }
    SpecNode n = SpecNode::make_leaf(rule);
    n.members = std::move(attributes);
    return n;
  }

  // {"reduce": op}, and {"reduce": "mean", "weight": "/path"} or
  // "/path@attribute".
  SpecNode reduce_leaf(const JNode& j, std::size_t at) const {
    const JNode& value = j.values[at];
    static const std::pair<const char*, Reducer> reducers[] = {{"sum", Reducer::Sum},   {"mean", Reducer::Mean},
                                                               {"min", Reducer::Min},   {"max", Reducer::Max},
                                                               {"stack", Reducer::Stack}};
    const auto named = std::find_if(std::begin(reducers), std::end(reducers), [&](const auto& r) {
      return value.type == JNode::Type::String && value.text == r.first;
    });
    if (named == std::end(reducers))
      b_.fail(value.pos, "\"reduce\" takes \"sum\", \"mean\", \"min\", \"max\" or \"stack\"");
    LeafRule rule = LeafRule::reduce(named->second);
    for (std::size_t i = 0; i < j.keys.size(); ++i) {
      if (i == at) continue;
      if (j.keys[i] != "weight")
        b_.fail(j.key_pos[i], fmt::format("a \"reduce\" leaf takes only \"weight\" besides the reducer, not \"{}\" "
                                          "(to name group members called so, they cannot be mixed with \"reduce\")",
                                          printable(j.keys[i])));
      if (named->second != Reducer::Mean)
        b_.fail(j.key_pos[i], "\"weight\" goes with {\"reduce\": \"mean\"} only");
      rule = weight_of(j.values[i]);
    }
    return SpecNode::make_leaf(rule);
  }

  // "/path" (a dataset) or "/path@name" (an attribute of the object at
  // /path; "/@name" of the root group). An "@" inside a name is \x40.
  LeafRule weight_of(const JNode& value) const {
    const char* form = "\"weight\" takes the absolute HDF5 path of a rank-0 dataset (\"/num_tokens\") or of an "
                       "attribute (\"/@num_tokens\", \"/group@name\")";
    if (value.type != JNode::Type::String) b_.fail(value.pos, form);
    const std::size_t at = value.text.find('@');
    const std::string path = name_at(value.text.substr(0, at), value.pos);
    const std::string attribute = at == std::string::npos ? "" : name_at(value.text.substr(at + 1), value.pos);
    if (path.empty() || path[0] != '/' || (at != std::string::npos && attribute.empty())) b_.fail(value.pos, form);
    return LeafRule::weighted_mean(path, attribute);
  }

  // {"max_seqlen": "/path/of/offsets"} or {"num_tokens": ...}, alone or
  // with "index": k (the element of a 1-D attribute that is derived, as
  // AnnData's shape[0] is).
  SpecNode derived_leaf(const JNode& j, std::size_t at, Quantity q) const {
    const JNode& value = j.values[at];
    LeafRule rule = LeafRule::derived(q, name_at(value.text, value.pos));
    for (std::size_t i = 0; i < j.keys.size(); ++i) {
      if (i == at) continue;
      if (j.keys[i] != "index")
        b_.fail(j.key_pos[i], fmt::format("a \"{}\" leaf takes only the offsets path and \"index\", not \"{}\" (to "
                                          "name group members called so, give them a spec other than a path)",
                                          quantity_name(q), printable(j.keys[i])));
      const JNode& index = j.values[i];
      if (index.type != JNode::Type::Integer || !index.integer_fits || index.integer < 0 || index.integer > 1024)
        b_.fail(index.pos, "\"index\" takes the element of a 1-D attribute, an integer from 0");
      rule.element = static_cast<int>(index.integer);
    }
    return SpecNode::make_leaf(rule);
  }

  // {"packed": "/path/of/offsets", "axis": k, "pad": v} or {"per_sequence": ..., "axis": k}.
  SpecNode sequence_leaf(const JNode& j, std::size_t at) const {
    const std::string& key = j.keys[at];
    const JNode& value = j.values[at];
    const std::string path = value.type == JNode::Type::String ? name_at(value.text, value.pos) : std::string();
    if (path.empty() || path[0] != '/')
      b_.fail(value.pos,
              fmt::format("\"{}\" takes the absolute HDF5 path of an offsets dataset, e.g. \"/cu_seqlens\"", key));
    const bool packed = key == "packed";
    LeafRule rule = packed ? LeafRule::packed(path, 0) : LeafRule::per_sequence(path, 0);
    for (std::size_t i = 0; i < j.keys.size(); ++i) {
      if (i == at) continue;
      if (j.keys[i] == "axis") {
        rule.axis = axis_of(j.values[i], "axis");
      } else if (j.keys[i] == "pad" && packed) {
        rule.pad = pad_of(j.values[i]);
      } else {
        b_.fail(j.key_pos[i], fmt::format("a \"{}\" leaf takes only {} besides the offsets path, not \"{}\"", key,
                                          packed ? "\"axis\" and \"pad\"" : "\"axis\"", j.keys[i]));
      }
    }
    return SpecNode::make_leaf(rule);
  }

  // "pad": an integer (up to int64), a finite number, or true / false.
  PadValue pad_of(const JNode& j) const {
    if (j.type == JNode::Type::Integer && j.integer_fits) return PadValue::of_integer(j.integer);
    if (j.type == JNode::Type::Float && std::isfinite(j.number)) return PadValue::of_number(j.number);
    if (j.type == JNode::Type::Bool) return PadValue::of_bool(j.boolean);
    b_.fail(j.pos, "\"pad\" takes a number (the value --cp-pad pads documents with), an integer within int64 or a "
                   "finite float, or true or false for bool data");
  }

  // A key's or a path's name as written (see unescape_name), or an error
  // at `pos`.
  std::string name_at(const std::string& text, SourcePos pos) const {
    try {
      return unescape_name(text);
    } catch (const Error& e) {
      b_.fail(pos, e.what());
    }
  }

  // {"reduse": "sum"}: a leaf's key misspelt makes a member whose string is
  // no spec ("sum"); the key, not the string, is what to fix.
  void misspelt_leaf_key(const JNode& j, std::size_t i) const {
    const JNode& value = j.values[i];
    if (value.type != JNode::Type::String || value.text == "replicate" || value.text == "offsets" ||
        value.text == "drop")
      return;
    if (const auto near = nearest(j.keys[i], leaf_keys()); near && *near != j.keys[i])
      b_.fail(j.key_pos[i], fmt::format("key \"{}\" holds \"{}\", which is no member's spec: did you mean \"{}\" (a "
                                        "leaf's key)?",
                                        printable(j.keys[i]), printable(value.text), *near));
  }

  // Keys are read as written: "*" is the wildcard, "@name" an attribute,
  // anything else a member; the name is then unescaped, so that "\\x2a"
  // names a member "*" and "\\x40x" a member "@x".
  SpecNode group_object(const JNode& j) const {
    SpecNode n;
    n.kind = SpecNode::Kind::Object;
    std::unordered_set<std::string> names;  // "/member", "@attribute"
    for (std::size_t i = 0; i < j.keys.size(); ++i) {
      const std::string& key = j.keys[i];
      const JNode& value = j.values[i];
      if (key.empty() || key == "@") b_.fail(j.key_pos[i], "empty member name");
      misspelt_leaf_key(j, i);
      SpecNode sub = convert(value);
      if (key == "*") {
        n.star = std::make_shared<SpecNode>(std::move(sub));
        continue;
      }
      const bool attribute = key[0] == '@';
      std::string name = name_at(attribute ? key.substr(1) : key, j.key_pos[i]);
      if (!names.insert((attribute ? "@" : "/") + name).second)  // '/' is in no name
        b_.fail(j.key_pos[i], fmt::format("key \"{}\" names the same {} as an earlier key", printable(key),
                                          attribute ? "attribute" : "member"));
      n.members.push_back({std::move(name), std::move(sub), attribute});
    }
    return n;
  }

  const JsonTree& b_;
};

}  // namespace

std::string unescape_name(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\0') throw Error("a name cannot hold a NUL byte");
    if (c != '\\') {
      out += c;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '\\') {
      out += '\\';
      ++i;
      continue;
    }
    if (i + 3 < text.size() && text[i + 1] == 'x' && hex(text[i + 2]) >= 0 && hex(text[i + 3]) >= 0) {
      const char byte = static_cast<char>(hex(text[i + 2]) * 16 + hex(text[i + 3]));
      if (byte == '\0') throw Error("a name cannot hold a NUL byte (\\x00)");
      out += byte;
      i += 3;
      continue;
    }
    throw Error(fmt::format("unknown escape \"{}\" in a name (a name writes a backslash as \\\\ and a byte as \\xNN)",
                            printable(std::string(text.substr(i, 2)))));
  }
  return out;
}

SpecNode parse_spec(std::string_view text, const std::string& name) {
  const JsonTree tree(text, name);
  return Converter(tree).convert(tree.root());
}

}  // namespace mb::specs
