#include "specs/emit.hpp"

#include <fmt/format.h>

namespace mb::specs {
namespace {

// Length of the valid UTF-8 sequence at `p` (at most `n` bytes), or 0 when
// the bytes there are not one (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF; what nlohmann's dump accepts).
std::size_t utf8_length(const unsigned char* p, std::size_t n) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  std::size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (std::size_t k = 2; k < len; ++k)
    if (p[k] < 0x80 || p[k] > 0xBF) return 0;
  return len;
}

void append_hex_escape(std::string& out, unsigned char c) { out += fmt::format("\\x{:02x}", c); }

// Copies valid UTF-8 as is and writes every other byte as \xNN; with
// `double_backslash`, a backslash is written \\ so that the text reads back.
std::string escaped(std::string_view raw, bool double_backslash) {
  std::string out;
  out.reserve(raw.size());
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  for (std::size_t i = 0; i < raw.size();) {
    const std::size_t len = utf8_length(p + i, raw.size() - i);
    if (len == 0) {
      append_hex_escape(out, p[i++]);
      continue;
    }
    if (double_backslash && p[i] == '\\') out += '\\';
    out.append(raw.substr(i, len));
    i += len;
  }
  return out;
}

// Keys that would read as something else than a member name.
bool reads_as_keyword(const std::string& key) {
  return key == "*" || key[0] == '@' || key == "split_axis" || key == "sequence_axis" || key == "reduce" ||
         key == "packed" || key == "per_sequence";
}

}  // namespace

std::string escape_name(std::string_view raw) { return escaped(raw, true); }

std::string printable_text(std::string_view raw) { return escaped(raw, false); }

std::string member_key(const std::string& name) {
  std::string key = escape_name(name);
  if (!key.empty() && reads_as_keyword(key)) {
    std::string first;
    append_hex_escape(first, static_cast<unsigned char>(key[0]));
    key.replace(0, 1, first);
  }
  return key;
}

std::string attribute_key(const std::string& name) { return "@" + escape_name(name); }

std::string weight_key(const LeafRule& rule) {
  // "@" separates the path from the attribute's name: one inside a name is \x40.
  const auto part = [](const std::string& name) {
    std::string out;
    for (char c : escape_name(name)) out += c == '@' ? std::string("\\x40") : std::string(1, c);
    return out;
  };
  return rule.weight_attribute.empty() ? part(rule.weight) : part(rule.weight) + "@" + part(rule.weight_attribute);
}

namespace {

// A pad as the spec wrote it: true / false stay JSON booleans, so that the
// manifest's spec reads back as the same pad.
nlohmann::ordered_json pad_json(const PadValue& pad) {
  switch (pad.kind) {
    case PadValue::Kind::Integer: return pad.integer;
    case PadValue::Kind::Number: return pad.number;
    case PadValue::Kind::Bool: return pad.flag;
  }
  return nullptr;
}

}  // namespace

nlohmann::ordered_json rule_json(const LeafRule& rule, RuleForm form) {
  using json = nlohmann::ordered_json;
  const bool spec = form == RuleForm::Spec;
  switch (rule.mode) {
    case LeafRule::Mode::Split: {
      json out = spec ? (rule.sequence_axis ? json{{"split_axis", rule.axis}} : json(rule.axis))
                      : json{{"mode", "split"}, {"axis", rule.axis}};
      if (rule.sequence_axis) out["sequence_axis"] = *rule.sequence_axis;
      return out;
    }
    case LeafRule::Mode::Replicate: return spec ? json("replicate") : json{{"mode", "replicate"}};
    case LeafRule::Mode::Reduce: {
      json out = spec ? json{{"reduce", reducer_name(rule.reducer)}}
                      : json{{"mode", "reduce"}, {"reducer", reducer_name(rule.reducer)}};
      if (rule.weighted()) out["weight"] = weight_key(rule);
      return out;
    }
    case LeafRule::Mode::Offsets: return spec ? json("offsets") : json{{"mode", "offsets"}};
    case LeafRule::Mode::Packed: {
      json out = spec ? json{{"packed", escape_name(rule.offsets)}, {"axis", rule.axis}}
                      : json{{"mode", "packed"}, {"offsets", escape_name(rule.offsets)}, {"axis", rule.axis}};
      if (rule.pad) out["pad"] = pad_json(*rule.pad);
      return out;
    }
    case LeafRule::Mode::PerSequence:
      return spec ? json{{"per_sequence", escape_name(rule.offsets)}, {"axis", rule.axis}}
                  : json{{"mode", "per_sequence"}, {"offsets", escape_name(rule.offsets)}, {"axis", rule.axis}};
    case LeafRule::Mode::Derive: {
      json out = spec ? json{{quantity_name(rule.quantity), escape_name(rule.offsets)}}
                      : json{{"mode", "derive"}, {"quantity", quantity_name(rule.quantity)},
                             {"offsets", escape_name(rule.offsets)}};
      if (rule.element) out["index"] = *rule.element;
      return out;
    }
    case LeafRule::Mode::Drop: return spec ? json("drop") : json{{"mode", "drop"}};
    case LeafRule::Mode::PaddedOffsets:  // never in a spec: merge gives it to what split --cp-pad wrote
      return json{{"mode", "padded_offsets"}, {"offsets", escape_name(rule.offsets)}};
    case LeafRule::Mode::RankBounds:  // never in a spec: merge gives it to what a default-layout DP split wrote
      return json{{"mode", "rank_bounds"}, {"offsets", escape_name(rule.offsets)}};
  }
  return nullptr;
}

nlohmann::ordered_json resolved_spec_json(const NodeInfo& node, const Resolution& resolution) {
  auto out = nlohmann::ordered_json::object();
  for (const auto& a : node.attributes) {
    const LeafRule rule = resolution.attribute_rule(node.path, a.name);
    if (rule.mode == LeafRule::Mode::Reduce || rule.mode == LeafRule::Mode::Derive)
      out[attribute_key(a.name)] = rule_json(rule);
  }
  if (!node.is_group()) {
    // A dataset's own derived or reduced attributes go beside its split
    // axis: {"split_axis": 0, "@NROWS": {"num_rows": "/df/table"}}.
    const LeafRule& rule = resolution.dataset_rule(node.path);
    if (out.empty()) return rule_json(rule);
    nlohmann::ordered_json leaf = rule_json(rule);
    if (!leaf.is_object()) leaf = {{"split_axis", rule.axis}};
    for (auto& [key, value] : out.items()) leaf[key] = value;
    return leaf;
  }
  for (const auto& child : node.children) out[member_key(child.name)] = resolved_spec_json(child, resolution);
  return out;
}

}  // namespace mb::specs
