#pragma once
// "Did you mean ...?": the nearest of some known words to a misspelt one, for
// subcommands, options and spec keys.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mb {

// Optimal string alignment distance: insertions, deletions, substitutions
// and transpositions of two neighbours ("mrege" -> "merge") cost 1 each.
// On bytes (names are HDF5 byte strings).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word` when it is close enough to be taken for a
// typo of it: at most `max_distance` edits, and fewer than half the
// candidate's length (so that "x" never suggests "y"). Ties go to the
// earliest candidate; none is close -> nullopt.
std::optional<std::string> nearest(std::string_view word, const std::vector<std::string>& candidates,
                                   std::size_t max_distance = 2);

}  // namespace mb
