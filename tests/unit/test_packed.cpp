#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "core/error.hpp"
#include "core/packed.hpp"
#include "core/plan.hpp"
#include "helpers.hpp"
#include "specs/parse.hpp"

using mb::Range;
using I64 = std::vector<std::int64_t>;
using U64 = std::vector<std::uint64_t>;

namespace {

// The best largest-run token count over every way to cut `tokens` into
// `pieces` contiguous runs (empty runs allowed), by exhaustive search.
std::uint64_t brute_force_best(const std::vector<std::uint64_t>& tokens, std::uint64_t pieces) {
  const std::size_t s = tokens.size();
  std::uint64_t best = UINT64_MAX;
  // choose pieces-1 cut points in [0, s], non-decreasing
  std::vector<std::size_t> cuts(pieces - 1, 0);
  while (true) {
    std::uint64_t worst = 0;
    std::size_t at = 0;
    for (std::size_t p = 0; p < pieces; ++p) {
      const std::size_t end = p + 1 < pieces ? cuts[p] : s;
      std::uint64_t sum = 0;
      for (std::size_t k = at; k < end; ++k) sum += tokens[k];
      worst = std::max(worst, sum);
      at = end;
    }
    best = std::min(best, worst);
    // next non-decreasing cut vector
    std::size_t i = cuts.size();
    while (i > 0 && cuts[i - 1] == s) --i;
    if (i == 0) break;
    ++cuts[i - 1];
    for (std::size_t j = i; j < cuts.size(); ++j) cuts[j] = cuts[i - 1];
  }
  return best;
}

}  // namespace

TEST_CASE("balancing is exactly optimal against brute force") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t s = 1 + rng() % 8;
    const std::uint64_t pieces = 1 + rng() % 5;
    std::vector<std::uint64_t> tokens(s);
    const bool skewed = trial % 2 == 0;
    for (auto& t : tokens) t = skewed ? (rng() % 4 == 0 ? 50 + rng() % 200 : rng() % 10) : rng() % 20;
    const auto runs = mb::balance_runs(tokens, pieces);
    REQUIRE(runs.size() == pieces);
    // contiguous, covering, and non-empty while sequences remain
    std::uint64_t at = 0;
    for (std::size_t p = 0; p < runs.size(); ++p) {
      CHECK(runs[p].begin == at);
      if (p < std::min<std::size_t>(s, pieces)) CHECK(runs[p].size() >= 1);
      at = runs[p].end;
    }
    CHECK(at == s);
    const auto sums = mb::run_weights(tokens, runs);
    CHECK(*std::max_element(sums.begin(), sums.end()) == brute_force_best(tokens, pieces));
  }
}

TEST_CASE("balancing examples") {
  // one long sequence dominates: it gets a run of its own
  CHECK(mb::balance_runs({1, 1, 100, 1, 1}, 3) == std::vector<Range>{{0, 2}, {2, 3}, {3, 5}});
  // fewer sequences than pieces: trailing runs are empty
  CHECK(mb::balance_runs({5, 5}, 4) == std::vector<Range>{{0, 1}, {1, 2}, {2, 2}, {2, 2}});
  CHECK(mb::balance_runs({}, 2) == std::vector<Range>{{0, 0}, {0, 0}});
  CHECK(mb::balance_runs({0, 0, 0}, 2) == std::vector<Range>{{0, 2}, {2, 3}});
}

TEST_CASE("offsets must start at 0 and rise") {
  CHECK(mb::check_offsets(I64{0, 3, 3, 7}, "/cu") == mb::Offsets{0, 3, 3, 7});
  CHECK_THROWS_WITH_AS(mb::check_offsets(I64{1, 3}, "/cu"), "/cu: offsets must start at 0 (offsets[0] is 1)",
                       mb::Error);
  CHECK_THROWS_WITH_AS(mb::check_offsets(I64{0, 5, 4}, "/cu"),
                       "/cu: offsets must rise: offsets[2] = 4 is below offsets[1] = 5", mb::Error);
  CHECK_THROWS_AS(mb::check_offsets(I64{}, "/cu"), mb::Error);
  CHECK_THROWS_WITH_AS(mb::check_offsets(I64{0, -1}, "/cu"),
                       "/cu: offsets must rise: offsets[1] = -1 is below offsets[0] = 0", mb::Error);
}

TEST_CASE("unsigned offsets are exact up to 2^64 - 1") {
  const U64 big{0, (1ull << 63) + 5, UINT64_MAX - 1, UINT64_MAX};
  CHECK(mb::check_offsets(big, "/cu") == big);
  CHECK_THROWS_WITH_AS(mb::check_offsets(U64{0, UINT64_MAX, 1ull << 63}, "/cu"),
                       "/cu: offsets must rise: offsets[2] = 9223372036854775808 is below offsets[1] = "
                       "18446744073709551615",
                       mb::Error);
  CHECK(mb::sequence_tokens({big}) == std::vector<std::uint64_t>{(1ull << 63) + 5, (1ull << 63) - 7, 1});
  // the tokens of two offsets datasets can add up past 64 bits: refused, never wrapped
  CHECK_THROWS_AS(mb::sequence_tokens({big, big}), mb::Error);
  const auto tokens = mb::sequence_tokens({big});
  CHECK(mb::balance_runs(tokens, 2) == std::vector<Range>{{0, 1}, {1, 3}});
  CHECK_THROWS_AS(mb::balance_runs({UINT64_MAX, 1}, 2), mb::Error);
}

TEST_CASE("packed and per-sequence lengths must agree with their offsets") {
  const mb::Offsets cu{0, 2, 5};
  const std::string tokens = "/tokens", ids = "/ids", path = "/cu";
  CHECK_NOTHROW(mb::check_packed_length({tokens, 0, 5, path}, cu));
  CHECK_THROWS_WITH_AS(mb::check_packed_length({tokens, 1, 4, path}, cu),
                       "/tokens has 4 tokens on axis 1, but its offsets /cu end at 5", mb::Error);
  CHECK_NOTHROW(mb::check_per_sequence_length({ids, 0, 2, path}, cu));
  CHECK_THROWS_WITH_AS(mb::check_per_sequence_length({ids, 0, 3, path}, cu),
                       "/ids has 3 rows on axis 0, but /cu describes 2 sequences", mb::Error);
  CHECK_THROWS_WITH_AS(mb::check_same_sequences("/cu", cu, "/cu_k", {0, 1}),
                       "offsets datasets disagree: /cu holds 2 sequences, /cu_k holds 1", mb::Error);
}

TEST_CASE("tokens of q and k offsets add up per sequence") {
  CHECK(mb::sequence_tokens({{0, 2, 5}, {0, 4, 4}}) == std::vector<std::uint64_t>{6, 3});
}

TEST_CASE("causal attention work per sequence: L*(L+1)/2, summed over offsets datasets, refused past 64 bits") {
  CHECK(mb::sequence_work({{0, 1, 4, 4, 10}}) == U64{1, 6, 0, 21});
  CHECK(mb::sequence_work({{0, 1, 4}, {0, 2, 2}}) == U64{1 + 3, 6 + 0});
  CHECK_THROWS_AS(mb::sequence_work({{0, 1ull << 33}}), mb::Error);  // 2^65 + 2^32 work
}

TEST_CASE("a file's offsets rows: its cells' rows, one leading offset, and back") {
  // Cells [0, 2), [5, 7), empty, [7, 8): rows 0..2, then 6..7 and 8 (one per sequence).
  const mb::RowMap rows = mb::offsets_rows({{0, 2}, {5, 7}, {7, 7}, {7, 8}});
  CHECK(rows == mb::RowMap{{0, 3, 1}, {6, 2, 1}, {8, 1, 1}});
  CHECK(mb::rows_in(rows) == 5 + 1);  // 5 sequences: 6 offsets
  CHECK(mb::sequences_of_offsets_rows(rows, "/cu") == mb::RowMap{{0, 2, 1}, {5, 2, 1}, {7, 1, 1}});
  CHECK(mb::offsets_rows({{3, 3}, {9, 10}}) == mb::RowMap{{3, 1, 1}, {10, 1, 1}});  // an empty first cell: [0]
  CHECK(mb::sequences_of_offsets_rows({{3, 1, 1}}, "/cu").empty());
  CHECK_THROWS_AS(mb::sequences_of_offsets_rows({{0, 2, 2}}, "/cu"), mb::Error);
  CHECK_THROWS_AS(mb::sequences_of_offsets_rows({{0, 2, 1}, {0, 1, 1}}, "/cu"), mb::Error);
}

TEST_CASE("a file's offsets: its sequences' lengths from 0") {
  // Input offsets 0 1 7 8 10 16; the file holds sequences [0, 2) and [3, 5):
  // rows 0..2 read as is, rows 4..5 read with row 3 before them.
  const U64 lengths = mb::file_lengths({{0, 1, 7}, {8, 10, 16}});
  CHECK(lengths == U64{1, 6, 2, 6});
  CHECK(mb::offsets_of(lengths) == mb::Offsets{0, 1, 7, 9, 15});
  CHECK(mb::file_lengths({{5}}).empty());
  CHECK(mb::offsets_of({}) == mb::Offsets{0});
  CHECK_THROWS_AS(mb::offsets_of({UINT64_MAX, 1}), mb::Error);
}

TEST_CASE("packed plan across data-parallel ranks: optimal cells for tokens and for work, N per rank, order kept") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const std::uint64_t degree = 1 + rng() % 3, n = 1 + rng() % 3, sequences = 8;
    U64 cu{0};
    for (std::uint64_t s = 0; s < sequences; ++s) cu.push_back(cu.back() + (rng() % 3 == 0 ? 0 : rng() % 12));
    const auto tree = mb::test::root({mb::test::dataset("cu", {9}), mb::test::dataset("tok", {cu.back()})});
    const auto spec = mb::specs::parse_spec(R"({"cu": "offsets", "tok": {"packed": "/cu"}})", "s");
    const auto r = mb::resolve(tree, spec, "s");
    for (const auto balance : {mb::Balance::Tokens, mb::Balance::Attention}) {
      mb::SplitOptions o;
      o.count = n;
      o.dp = {degree, false};
      o.balance = balance;
      o.on_short = mb::OnShort::Empty;
      const auto p = mb::plan_split(tree, r, o, {{"/cu", cu}});
      REQUIRE(p.sequences->runs.size() == degree * n);  // N cells for every rank
      std::uint64_t at = 0;
      for (const auto& run : p.sequences->runs) {  // contiguous, in order, covering
        CHECK(run.begin == at);
        at = run.end;
      }
      CHECK(at == sequences);
      const U64 weights = balance == mb::Balance::Tokens ? mb::sequence_tokens({cu}) : mb::sequence_work({cu});
      const U64 sums = mb::run_weights(weights, p.sequences->runs);
      CHECK(*std::max_element(sums.begin(), sums.end()) == brute_force_best(weights, degree * n));
    }
  }
}

TEST_CASE("a default-layout DP file's rank bounds: each rank's cell of the microbatch, back to back") {
  // D = 2, N = 3: cells (0, 0..2) then (1, 0..2), rank-major; cell (1, 2) empty.
  const std::vector<Range> runs{{0, 2}, {2, 3}, {3, 6}, {6, 7}, {7, 9}, {9, 9}};
  CHECK(mb::rank_bounds(runs, 2, 0) == U64{0, 2, 3});
  CHECK(mb::rank_bounds(runs, 2, 1) == U64{0, 1, 3});
  CHECK(mb::rank_bounds(runs, 2, 2) == U64{0, 3, 3});
  CHECK(mb::rank_bounds_name("/g/cu_seqlens") == "/g/cu_seqlens_dp_bounds");
  mb::check_rank_bounds("f: /cu_dp_bounds", U64{0, 3, 3}, U64{0, 3, 3}, 3);
  CHECK_THROWS_WITH_AS(mb::check_rank_bounds("f: /cu_dp_bounds", U64{0, 2, 3}, U64{0, 3, 3}, 3),
                       "f: /cu_dp_bounds: the data-parallel ranks' sequence bounds [0, 2, 3] are not those of the "
                       "file's cells ([0, 3, 3], of 3 sequences)",
                       mb::Error);
  CHECK_THROWS_AS(mb::check_rank_bounds("f", U64{0, 3, 3}, U64{0, 3, 3}, 4), mb::Error);  // the offsets hold 4
}
