#pragma once
// JSON -> spec tree. Every error names the spec (file name), the line and
// column, and what was expected there.
#include <cstddef>
#include <string>
#include <string_view>

#include "core/spec.hpp"

namespace mb::specs {

// Nesting deeper than this is refused (no spec needs it; it bounds recursion).
inline constexpr int kMaxDepth = 256;

// Parses spec text. `name` is used in error messages ("spec.json").
SpecNode parse_spec(std::string_view text, const std::string& name);

// An HDF5 name or path as JSON writes it (specs::escape_name): "\\" is a
// backslash, "\xNN" (two hex digits) the byte NN; any other backslash is an
// error, and so is a NUL byte (HDF5 names cannot hold one). Throws
// mb::Error saying what is wrong (the caller adds where).
std::string unescape_name(std::string_view text);

// A spec file larger than this is refused (a resolved spec of a million
// datasets is well under it); it bounds what a pipe can make us hold.
inline constexpr std::size_t kMaxSpecBytes = std::size_t{256} << 20;

// The name messages give the spec read from `path`: "<stdin>" for "-".
std::string spec_file_name(const std::string& path);

// The text of a spec file: a regular file or a pipe (a FIFO, `-s <(jq ...)`),
// or standard input for "-". A directory or a device is refused, and so is
// text over kMaxSpecBytes; a missing file is "no such file". Throws mb::Error
// naming the spec.
std::string read_spec_file(const std::string& path);

// Reads and parses a spec file (see read_spec_file).
SpecNode load_spec_file(const std::string& path);

}  // namespace mb::specs
