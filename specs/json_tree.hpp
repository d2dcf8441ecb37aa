#pragma once
// JSON text as a tree whose every value knows where it starts (line and
// column), for errors that point into the spec. nlohmann's DOM keeps no
// positions, so the tree is built from its SAX events. Internal to specs/.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "specs/parse.hpp"

namespace mb::specs {

// A JSON value with the position where it starts. nlohmann's DOM keeps no
// positions, so we build this small tree from SAX events instead.
struct JNode {
  enum class Type { Null, Bool, Integer, Float, String, Object, Array };
  Type type = Type::Null;
  SourcePos pos;
  bool boolean = false;
  bool integer_fits = true;  // false for integers beyond int64
  std::int64_t integer = 0;
  double number = 0;  // Float
  std::string text;  // String
  std::vector<std::string> keys;  // Object: keys[i] names values[i]
  std::vector<SourcePos> key_pos;
  std::vector<JNode> values;
  std::vector<JNode> items;
};

// Parses `text`; a malformed one throws mb::Error "NAME:LINE:COLUMN: WHAT",
// as `fail` does for what the caller refuses.
class JsonTree {
 public:
  JsonTree(std::string_view text, const std::string& name);
  const JNode& root() const { return root_; }
  [[noreturn]] void fail(SourcePos pos, const std::string& what) const;

 private:
  std::string name_;
  JNode root_;
};

// Replaces control bytes and bytes outside ASCII with \xNN, so that an error
// message stays one valid line whatever the spec file held.
std::string printable(const std::string& text);

}  // namespace mb::specs
