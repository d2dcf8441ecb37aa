#include "specs/json_tree.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb::specs {
namespace {

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
  bool number_float(number_float_t v, const string_t& literal) override {
    // An integer literal too large even for uint64 arrives here as a float.
    const bool integral = literal.find_first_of(".eE") == std::string::npos;
    JNode& n = *place(integral ? JNode::Type::Integer : JNode::Type::Float);
    n.integer_fits = !integral;
    n.number = v;
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

}  // namespace

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


JsonTree::JsonTree(std::string_view text, const std::string& name) : name_(name) {
  const char* cursor = text.data();
  Builder builder(text, &cursor, name_);
  TrackingIterator first(text.data(), &cursor), last(text.data() + text.size(), &cursor);
  nlohmann::json::sax_parse(first, last, &builder);
  root_ = builder.take_root();
}

void JsonTree::fail(SourcePos pos, const std::string& what) const {
  throw Error(fmt::format("{}:{}:{}: {}", name_, pos.line, pos.column, what));
}

}  // namespace mb::specs
