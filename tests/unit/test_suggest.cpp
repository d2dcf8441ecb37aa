#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/suggest.hpp"

using mb::edit_distance;
using mb::nearest;

TEST_CASE("edit distance: insertions, deletions, substitutions and neighbour swaps cost 1") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("split", "split") == 0);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("splt", "split") == 1);      // insertion
  CHECK(edit_distance("splitt", "split") == 1);    // deletion
  CHECK(edit_distance("spmit", "split") == 1);     // substitution
  CHECK(edit_distance("mrege", "merge") == 1);     // transposition
  CHECK(edit_distance("kitten", "sitting") == 3);  // the textbook case
  CHECK(edit_distance("ca", "abc") == 3);          // optimal string alignment: no edit of a swapped pair
  CHECK(edit_distance("dp-degre", "dp-degree") == 1);
  CHECK(edit_distance("abc", "cba") == edit_distance("cba", "abc"));
}

TEST_CASE("nearest: a close candidate, none when all are far, ties to the first") {
  const std::vector<std::string> commands = {"split", "merge", "inspect"};
  CHECK(nearest("splt", commands) == "split");
  CHECK(nearest("mrege", commands) == "merge");
  CHECK(nearest("inspetc", commands) == "inspect");
  CHECK(nearest("frobnicate", commands) == std::nullopt);
  CHECK(nearest("sp", commands) == std::nullopt);  // 3 edits
  // short names never suggest each other: one edit is half of "x"
  CHECK(nearest("y", {"x", "t"}) == std::nullopt);
  CHECK(nearest("ab", {"ac"}) == std::nullopt);
  CHECK(nearest("abc", {"abd"}) == "abd");
  // the nearest wins over an earlier, farther one; equal ones go to the first
  CHECK(nearest("input_id", {"input_xx", "input_ids"}) == "input_ids");
  CHECK(nearest("labelz", {"labels", "labelx"}) == "labels");
  CHECK(nearest("abcd", {"abcx", "abdc"}) == "abcx");
  CHECK(nearest("dp-degre", {"chunks", "dp-degree", "align"}) == "dp-degree");
  CHECK(nearest("x", {}) == std::nullopt);
  CHECK(nearest("logitz", {"logits"}, 0) == std::nullopt);  // the bound is the caller's
}
