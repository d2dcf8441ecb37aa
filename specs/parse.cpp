#include "specs/parse.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb::specs {
namespace {

// A JSON value with the position where it starts. nlohmann's DOM keeps no
// positions, so we build this small tree from SAX events instead.
struct JNode {
  enum class Type { Null, Bool, Integer, Float, String, Object, Array };
  Type type = Type::Null;
  SourcePos pos;
  bool boolean = false;
  bool integer_fits = true;  // false for integers beyond int64
  std::int64_t integer = 0;
  std::string text;  // String
  std::vector<std::string> keys;  // Object: keys[i] names values[i]
  std::vector<SourcePos> key_pos;
  std::vector<JNode> values;
  std::vector<JNode> items;
};

// Character iterator that publishes how far the lexer has read, so SAX
// callbacks know where in the text they are.
class TrackingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator(const char* p, const char** cursor) : p_(p), cursor_(cursor) {}
  reference operator*() const { return *p_; }
  TrackingIterator& operator++() {
    *cursor_ = ++p_;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const TrackingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** cursor_;
};

// Replaces control bytes and bytes outside ASCII with \xNN, so that an error
// message stays one valid line whatever the spec file held.
std::string printable(const std::string& text) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

class Builder : public nlohmann::json_sax<nlohmann::json> {
 public:
  Builder(std::string_view text, const char** cursor, const std::string& name)
      : text_(text), cursor_(cursor), name_(name), scan_from_(text.data()) {}

  JNode take_root() { return std::move(root_); }

  bool null() override { return emit(JNode::Type::Null); }
  bool boolean(bool v) override {
    JNode& n = *place(JNode::Type::Bool);
    n.boolean = v;
    return true;
  }
  bool number_integer(number_integer_t v) override {
    JNode& n = *place(JNode::Type::Integer);
    n.integer = v;
    return true;
  }
  bool number_unsigned(number_unsigned_t v) override {
    JNode& n = *place(JNode::Type::Integer);
    n.integer_fits = v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    n.integer = n.integer_fits ? static_cast<std::int64_t>(v) : 0;
    return true;
  }
  bool number_float(number_float_t, const string_t& literal) override {
    // An integer literal too large even for uint64 arrives here as a float.
    const bool integral = literal.find_first_of(".eE") == std::string::npos;
    JNode& n = *place(integral ? JNode::Type::Integer : JNode::Type::Float);
    n.integer_fits = !integral;
    return true;
  }
  bool string(string_t& v) override {
    place(JNode::Type::String)->text = v;
    return true;
  }
  bool binary(binary_t&) override { return emit(JNode::Type::Null); }
  bool start_object(std::size_t) override { return open(JNode::Type::Object); }
  bool key(string_t& k) override {
    JNode& obj = *stack_.back();
    const SourcePos pos = token_start();
    for (const auto& existing : obj.keys)
      if (existing == k) fail(pos, fmt::format("duplicate key \"{}\"", k));
    obj.keys.push_back(k);
    obj.values.emplace_back();
    obj.key_pos.push_back(pos);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(JNode::Type::Array); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::json::exception& ex) override {
    std::string what = ex.what();
    // nlohmann's text reads "[json.exception.parse_error.101] parse error at line 1, column 2: ...";
    // keep only what follows the position, which we print ourselves.
    if (auto colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
    what = printable(what);  // it quotes the offending bytes, which may not be valid UTF-8
    fail(position_of(text_.data() + std::min(position == 0 ? 0 : position - 1, text_.size())), what);
  }

  [[noreturn]] void fail(SourcePos pos, const std::string& what) const {
    throw Error(fmt::format("{}:{}:{}: {}", name_, pos.line, pos.column, what));
  }

 private:
  bool emit(JNode::Type type) {
    place(type);
    return true;
  }

  // Where the token of the current event starts: the first character after
  // the previous event that is not white space or a separator. (The lexer may
  // have read one character past a number; it is always a separator.)
  SourcePos token_start() {
    const char* p = scan_from_;
    const char* end = text_.data() + text_.size();
    while (p < end && (std::isspace(static_cast<unsigned char>(*p)) || *p == ',' || *p == ':')) ++p;
    scan_from_ = std::max(*cursor_, p + 1);
    return position_of(p);
  }

  // Line and column of `p`. Tokens arrive in order, so counting resumes from
  // the last position asked for (a manifest's spec has tens of thousands).
  SourcePos position_of(const char* p) const {
    if (p < counted_to_) {
      counted_to_ = text_.data();
      counted_pos_ = {1, 1};
    }
    for (; counted_to_ < p; ++counted_to_) {
      if (*counted_to_ == '\n') {
        ++counted_pos_.line;
        counted_pos_.column = 1;
      } else if ((static_cast<unsigned char>(*counted_to_) & 0xC0) != 0x80) {  // characters, not UTF-8 bytes
        ++counted_pos_.column;
      }
    }
    return counted_pos_;
  }

  JNode* place(JNode::Type type) {
    const SourcePos pos = token_start();
    JNode* n;
    if (stack_.empty()) {
      n = &root_;
    } else if (stack_.back()->type == JNode::Type::Array) {
      n = &stack_.back()->items.emplace_back();
    } else {
      n = &stack_.back()->values.back();
    }
    n->type = type;
    n->pos = pos;
    return n;
  }

  bool open(JNode::Type type) {
    JNode* n = place(type);
    if (static_cast<int>(stack_.size()) >= kMaxDepth)
      fail(n->pos, fmt::format("nesting deeper than {} levels", kMaxDepth));
    stack_.push_back(n);
    return true;
  }

  bool close() {
    stack_.pop_back();
    scan_from_ = *cursor_;
    return true;
  }

  std::string_view text_;
  const char** cursor_;
  const std::string& name_;
  const char* scan_from_;
  mutable const char* counted_to_ = text_.data();
  mutable SourcePos counted_pos_{1, 1};
  JNode root_;
  std::vector<JNode*> stack_;
};

class Converter {
 public:
  explicit Converter(const Builder& b) : b_(b) {}

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
        b_.fail(j.pos, fmt::format("unknown leaf spec \"{}\" (expected an axis, \"replicate\", \"offsets\", \"drop\", "
                                   "{{\"split_axis\": k}}, {{\"reduce\": ...}}, {{\"packed\": ...}}, "
                                   "{{\"per_sequence\": ...}}, {{\"max_seqlen\": \"/offsets\"}}, {{\"num_tokens\": \"/offsets\"}}, "
                                   "{{\"num_sequences\": \"/offsets\"}}, {{\"num_rows\": \"/table\"}}, null, "
                                   "an object or an array)",
                                   j.text));
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

  int axis_of(const JNode& j) const {
    if (j.type != JNode::Type::Integer) b_.fail(j.pos, "a split axis must be an integer");
    if (!j.integer_fits || j.integer < -1024 || j.integer > 1024)
      b_.fail(j.pos, "split axis is out of range (HDF5 datasets have at most 32 dimensions)");
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
    LeafRule rule = LeafRule::split(axis_of(j.values[at]));
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
      rule.sequence_axis = axis_of(j.values[i]);
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

  // {"packed": "/path/of/offsets", "axis": k} or {"per_sequence": ...}.
  SpecNode sequence_leaf(const JNode& j, std::size_t at) const {
    const std::string& key = j.keys[at];
    const JNode& value = j.values[at];
    const std::string path = value.type == JNode::Type::String ? name_at(value.text, value.pos) : std::string();
    if (path.empty() || path[0] != '/')
      b_.fail(value.pos,
              fmt::format("\"{}\" takes the absolute HDF5 path of an offsets dataset, e.g. \"/cu_seqlens\"", key));
    int axis = 0;
    for (std::size_t i = 0; i < j.keys.size(); ++i) {
      if (i == at) continue;
      if (j.keys[i] != "axis")
        b_.fail(j.key_pos[i],
                fmt::format("a \"{}\" leaf takes only \"axis\" besides the offsets path, not \"{}\"", key, j.keys[i]));
      axis = axis_of(j.values[i]);
    }
    return SpecNode::make_leaf(key == "packed" ? LeafRule::packed(path, axis) : LeafRule::per_sequence(path, axis));
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

  const Builder& b_;
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
  const char* cursor = text.data();
  Builder builder(text, &cursor, name);
  TrackingIterator first(text.data(), &cursor), last(text.data() + text.size(), &cursor);
  nlohmann::json::sax_parse(first, last, &builder);
  const JNode root = builder.take_root();
  return Converter(builder).convert(root);
}

namespace {

// Why a spec file could not be opened, as the messages say it.
std::string open_failure(int error) {
  if (error == ENOENT) return "no such file";
  if (error == EACCES) return "permission denied";
  if (error == ENOTDIR) return "a component of the path is not a directory";
  return std::strerror(error);
}

// A spec is read from a regular file or a pipe (a FIFO, `-s <(jq ...)`, a
// pipe on standard input); a read from a directory fails and one from a
// device may never end (a terminal waits, /dev/zero has no end), so those
// are refused by what they are. "" when fine.
std::string refusal(const struct stat& st, bool terminal) {
  if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (terminal) return "it is a terminal; pipe or redirect the spec into it";
  if (S_ISCHR(st.st_mode)) return "it is a character device, not a file or a pipe";
  if (S_ISBLK(st.st_mode)) return "it is a block device, not a file or a pipe";
  return "not a regular file or a pipe";
}

[[noreturn]] void cannot_read(const std::string& name, const std::string& why) {
  throw Error(fmt::format("{}: cannot read the spec: {}", name, why));
}

// Reads to the end, at most kMaxSpecBytes: a pipe has no size to check first.
std::string read_all(int fd, const std::string& name) {
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) cannot_read(name, std::strerror(errno));
    if (n == 0) return text;
    if (text.size() + static_cast<std::size_t>(n) > kMaxSpecBytes)
      cannot_read(name, fmt::format("it is larger than {} MiB (no spec needs that much)", kMaxSpecBytes >> 20));
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

// Closes the descriptor it holds (standard input is borrowed, not held).
struct Descriptor {
  int fd = -1;
  bool owned = true;
  ~Descriptor() {
    if (owned && fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string spec_file_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

std::string read_spec_file(const std::string& path) {
  const std::string name = spec_file_name(path);
  const bool standard_input = path == "-";
  struct stat st {};
  // Looked at before it is opened: opening a device can itself do something (a tape rewinds).
  if (!standard_input && ::stat(path.c_str(), &st) != 0) cannot_read(name, open_failure(errno));
  if (!standard_input && !refusal(st, false).empty()) cannot_read(name, refusal(st, false));
  // Blocks on a FIFO until it has a writer, as `cat` does (`<(jq ...)` has one).
  const Descriptor in{standard_input ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC), !standard_input};
  if (in.fd < 0) cannot_read(name, open_failure(errno));
  if (::fstat(in.fd, &st) != 0) cannot_read(name, std::strerror(errno));
  if (const std::string why = refusal(st, ::isatty(in.fd) == 1); !why.empty()) cannot_read(name, why);
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > kMaxSpecBytes)
    cannot_read(name, fmt::format("it is larger than {} MiB (no spec needs that much)", kMaxSpecBytes >> 20));
  return read_all(in.fd, name);
}

SpecNode load_spec_file(const std::string& path) { return parse_spec(read_spec_file(path), spec_file_name(path)); }

}  // namespace mb::specs
