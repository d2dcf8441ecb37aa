#pragma once
// JSON -> spec tree. Every error names the spec (file name), the line and
// column, and what was expected there.
#include <string>
#include <string_view>

#include "core/spec.hpp"

namespace mb::specs {

// Nesting deeper than this is refused (no spec needs it; it bounds recursion).
inline constexpr int kMaxDepth = 256;

// Parses spec text. `name` is used in error messages ("spec.json").
SpecNode parse_spec(std::string_view text, const std::string& name);

// Reads and parses a spec file.
SpecNode load_spec_file(const std::string& path);

}  // namespace mb::specs
