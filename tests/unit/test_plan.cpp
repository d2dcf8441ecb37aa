#include <doctest/doctest.h>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "helpers.hpp"
#include "specs/parse.hpp"

using namespace mb::test;
using mb::OnShort;
using mb::RowMap;
using mb::Segment;

namespace {

mb::NodeInfo tree() { return root({dataset("a", {10, 2}), dataset("b", {3, 7}), dataset("s", {})}); }

mb::SplitPlan plan(const std::string& spec, mb::SplitOptions o) {
  const auto t = tree();
  return mb::plan_split(t, mb::resolve(t, mb::specs::parse_spec(spec, "s"), "s"), o);
}

mb::SplitOptions cut_into(std::uint64_t n, OnShort s = OnShort::Error) { return {n, std::nullopt, s, {}}; }

// Row maps of contiguous pieces, from (begin, end) pairs.
std::vector<RowMap> ranges(std::vector<std::pair<std::uint64_t, std::uint64_t>> rs) {
  std::vector<RowMap> out;
  for (auto [b, e] : rs) out.push_back(b == e ? RowMap{} : RowMap{Segment{b, e - b, 1}});
  return out;
}

std::string error_of(const std::string& spec, mb::SplitOptions o) {
  try {
    plan(spec, o);
  } catch (const mb::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("each dataset is cut by its own length") {
  const auto p = plan("null", cut_into(3));
  CHECK(p.count == 3);
  CHECK(p.pieces.at("/a") == ranges({{0, 4}, {4, 7}, {7, 10}}));
  CHECK(p.pieces.at("/b") == ranges({{0, 1}, {1, 2}, {2, 3}}));
  CHECK(p.pieces.count("/s") == 0);
}

TEST_CASE("on-short policies") {
  CHECK(error_of("null", cut_into(4)).find("/b has 3 rows") != std::string::npos);
  const auto down = plan("null", cut_into(4, OnShort::Downsize));
  CHECK(down.count == 3);
  REQUIRE(down.warnings.size() == 1);
  CHECK(down.warnings[0].find("downsizing from 4 to 3") != std::string::npos);
  const auto empty = plan("null", cut_into(4, OnShort::Empty));
  CHECK(empty.count == 4);
  CHECK(empty.pieces.at("/b") == ranges({{0, 1}, {1, 2}, {2, 3}, {3, 3}}));
}

TEST_CASE("micro-batch size needs equal split lengths") {
  CHECK(error_of("null", {std::nullopt, 4, OnShort::Error, {}}).find("same length") != std::string::npos);
  const auto p = plan(R"({"a": 0, "b": "replicate", "s": "replicate"})", {std::nullopt, 3, OnShort::Error, {}});
  CHECK(p.count == 4);
  CHECK(p.pieces.at("/a") == ranges({{0, 3}, {3, 6}, {6, 9}, {9, 10}}));
  CHECK(error_of(R"({"*": "replicate"})", {std::nullopt, 3, OnShort::Error, {}}).find("splits none") !=
        std::string::npos);
}

TEST_CASE("a micro-batch size past the length gives one microbatch, however large") {
  for (const std::uint64_t size : {std::uint64_t{10}, std::uint64_t{11}, UINT64_MAX / 2 + 1, UINT64_MAX}) {
    const auto p = plan(R"({"a": 0, "b": "replicate", "s": "replicate"})", {std::nullopt, size, OnShort::Error, {}});
    CHECK(p.count == 1);
    CHECK(p.pieces.at("/a") == ranges({{0, 10}}));
  }
}

TEST_CASE("reducers are refused on split, absurd counts are usage errors") {
  CHECK(error_of(R"({"*": null, "s": {"reduce": "sum"}})", cut_into(2)) ==
        "spec gives a reducer for /s: a reducer only applies to merge; for split, give an axis, \"replicate\" or "
        "\"drop\"");
  CHECK(error_of(R"({"*": null, "s": {"reduce": "stack"}})", cut_into(2)) ==
        "spec gives a reducer for /s: a reducer only applies to merge; for split, give an axis, \"replicate\" or "
        "\"drop\"");
  CHECK(error_of(R"({"*": null, "a": {"reduce": "mean", "weight": "/s"}})", cut_into(2)) ==
        "spec gives a reducer for /a: a reducer only applies to merge; for split, give an axis, \"replicate\" or "
        "\"drop\"");
  try {
    plan("null", cut_into(1'000'000'000'000));
    FAIL("expected an error");
  } catch (const mb::Error& e) {
    CHECK(e.exit_code() == 2);
  }
  CHECK_THROWS_AS(plan("null", cut_into(0)), mb::Error);
}

TEST_CASE("data-parallel degree: slices cut separately, lengths must divide") {
  // /a has 10 rows -> 2 slices of 5; /b has 3 rows, not divisible by 2
  CHECK(error_of("null", {2, std::nullopt, OnShort::Error, {2, false}}) ==
        "/b has 3 rows on its split axis, not divisible by --dp-degree 2");
  const auto p = plan(R"({"a": 0, "*": "replicate"})", {2, std::nullopt, OnShort::Error, {2, false}});
  CHECK(p.pieces.at("/a") == std::vector<RowMap>{{{0, 3, 1}, {5, 3, 1}}, {{3, 2, 1}, {8, 2, 1}}});
  const auto aligned = plan(R"({"a": 0, "*": "replicate"})", {2, std::nullopt, OnShort::Error, {2, true}});
  CHECK(aligned.pieces.at("/a") == std::vector<RowMap>{{{0, 3, 2}, {1, 3, 2}}, {{6, 2, 2}, {7, 2, 2}}});
  // the slice length (5) is what --on-short compares with N
  CHECK(error_of(R"({"a": 0, "*": "replicate"})", {6, std::nullopt, OnShort::Error, {2, false}})
            .find("/a has 5 rows on its split axis per data-parallel slice") != std::string::npos);
}

namespace {
// tokens: 10 tokens in sequences of 1, 6, 1, 2; a per-sequence id; q and k offsets.
mb::NodeInfo packed_tree() {
  return root({dataset("tokens", {10}), dataset("pos", {2, 10}), dataset("cu_q", {5}), dataset("cu_k", {5}),
               dataset("seq_id", {4}), dataset("batch_attr", {3})});
}
const char* kPackedSpec = R"({
  "tokens": {"packed": "/cu_q"}, "pos": {"packed": "/cu_q", "axis": 1},
  "cu_q": "offsets", "cu_k": "offsets", "seq_id": {"per_sequence": "/cu_q"}, "batch_attr": "replicate"})";

mb::SplitPlan packed_plan(mb::SplitOptions o, mb::OffsetsValues values) {
  const auto t = packed_tree();
  return mb::plan_split(t, mb::resolve(t, mb::specs::parse_spec(kPackedSpec, "s"), "s"), o, values);
}

std::string packed_error(mb::SplitOptions o, mb::OffsetsValues values) {
  try {
    packed_plan(o, values);
  } catch (const mb::Error& e) {
    return e.what();
  }
  return "(no error)";
}

using I64 = std::vector<std::int64_t>;
const mb::OffsetsValues kValues{{"/cu_q", I64{0, 1, 7, 8, 10}}, {"/cu_k", I64{0, 1, 7, 8, 10}}};
}  // namespace

TEST_CASE("packed sequences: whole sequences, balanced on tokens") {
  const auto p = packed_plan(cut_into(2), kValues);
  REQUIRE(p.sequences);
  // tokens per sequence (q + k): 2, 12, 2, 4 -> best largest run is 12: [0,2) would be 14, so {0,1},{1,4}? no:
  // runs {0,2}=14 vs {0,1}=2 + {1,4}=18; optimum is {0,2} | {2,4} = 14 | 6
  CHECK(p.sequences->runs == std::vector<mb::Range>{{0, 2}, {2, 4}});
  CHECK(p.sequences->run_tokens == std::vector<std::uint64_t>{14, 6});
  CHECK(p.pieces.at("/tokens") == ranges({{0, 7}, {7, 10}}));
  CHECK(p.pieces.at("/pos") == ranges({{0, 7}, {7, 10}}));
  CHECK(p.pieces.at("/seq_id") == ranges({{0, 2}, {2, 4}}));
  CHECK(p.pieces.at("/cu_q") == ranges({{0, 3}, {2, 5}}));  // offsets rows a..b, rebased when written
  CHECK(p.pieces.count("/batch_attr") == 0);

  mb::SplitOptions by_count = cut_into(3);
  by_count.balance = mb::Balance::Sequences;
  CHECK(packed_plan(by_count, kValues).sequences->runs == std::vector<mb::Range>{{0, 2}, {2, 3}, {3, 4}});
  const auto by_size = packed_plan({std::nullopt, 3, OnShort::Error, {}}, kValues);
  CHECK(by_size.sequences->runs == std::vector<mb::Range>{{0, 3}, {3, 4}});
}

TEST_CASE("packed sequences: errors name the dataset") {
  CHECK(packed_error(cut_into(2), {{"/cu_q", I64{0, 1, 7, 8, 9}}, {"/cu_k", I64{0, 1, 7, 8, 10}}}) ==
        "/pos has 10 tokens on axis 1, but its offsets /cu_q end at 9");
  CHECK(packed_error(cut_into(2), {{"/cu_q", I64{0, 1, 7, 8, 10}}, {"/cu_k", I64{0, 1, 7, 10}}}).find("disagree") !=
        std::string::npos);
  CHECK(packed_error(cut_into(2), {{"/cu_q", I64{0, 1, 7, 6, 10}}, {"/cu_k", I64{0, 1, 7, 8, 10}}}) ==
        "/cu_q: offsets must rise: offsets[3] = 6 is below offsets[2] = 7");
  CHECK(packed_error(cut_into(5), kValues) ==
        "cannot cut into 5 microbatches: /cu_k has 4 sequences (--on-short downsize or empty allows it)");
  const auto t = packed_tree();
  CHECK_THROWS_WITH_AS(
      mb::resolve(t, mb::specs::parse_spec(R"({"tokens": {"packed": "/seq_id"}, "*": null})", "s"), "s"),
      "s:1:12: /tokens names /seq_id as its offsets, but its spec is not \"offsets\"", mb::Error);
  CHECK_THROWS_WITH_AS(mb::resolve(t, mb::specs::parse_spec(R"({"pos": "offsets", "*": null})", "s"), "s"),
                       "s:1:9: \"offsets\" needs a 1-D dataset of S+1 integers; /pos has rank 2", mb::Error);
}

TEST_CASE("packed sequences: uint64 offsets past 2^63 are planned exactly") {
  using U64 = std::vector<std::uint64_t>;
  const auto t = root({dataset("cu", {4}), dataset("ids", {3})});
  const auto r = mb::resolve(t, mb::specs::parse_spec(R"({"cu": "offsets", "ids": {"per_sequence": "/cu"}})", "s"),
                             "s");
  const U64 cu{0, (1ull << 63) + 5, (1ull << 63) + 10, UINT64_MAX};
  const auto p = mb::plan_split(t, r, cut_into(2), {{"/cu", cu}});
  REQUIRE(p.sequences);
  CHECK(p.sequences->tokens == UINT64_MAX);
  CHECK(p.sequences->runs == std::vector<mb::Range>{{0, 1}, {1, 3}});
  CHECK(p.sequences->run_tokens == U64{(1ull << 63) + 5, (1ull << 63) - 6});
  // two offsets datasets whose tokens add up past 64 bits: refused, not wrapped
  const auto t2 = root({dataset("cu", {4}), dataset("cu_k", {4}), dataset("ids", {3})});
  const auto r2 = mb::resolve(
      t2, mb::specs::parse_spec(R"({"cu": "offsets", "cu_k": "offsets", "ids": {"per_sequence": "/cu"}})", "s"), "s");
  CHECK_THROWS_AS(mb::plan_split(t2, r2, cut_into(2), {{"/cu", cu}, {"/cu_k", cu}}), mb::Error);
}

namespace {
mb::SplitOptions by_size(std::uint64_t size, bool drop_last, mb::DataParallel dp = {}) {
  mb::SplitOptions o;
  o.micro_batch_size = size;
  o.drop_last = drop_last;
  o.dp = dp;
  return o;
}
const char* kOnlyA = R"({"a": 0, "*": "replicate"})";
}  // namespace

TEST_CASE("micro-batch size: a shorter last microbatch is warned of, and --drop-last leaves it out") {
  const auto kept = plan(kOnlyA, by_size(3, false));
  CHECK(kept.pieces.at("/a") == ranges({{0, 3}, {3, 6}, {6, 9}, {9, 10}}));
  CHECK(kept.dropped == 0);
  REQUIRE(kept.warnings.size() == 1);
  CHECK(kept.warnings[0] ==
        "the last microbatch is shorter than the others: /a has 10 rows on its split axis, 1 more than a multiple "
        "of --micro-batch-size 3 (--drop-last leaves them out)");

  const auto dropped = plan(kOnlyA, by_size(3, true));
  CHECK(dropped.count == 3);
  CHECK(dropped.pieces.at("/a") == ranges({{0, 3}, {3, 6}, {6, 9}}));
  CHECK(dropped.dropped == 1);
  REQUIRE(dropped.warnings.size() == 1);
  CHECK(dropped.warnings[0].starts_with("--drop-last left out the last 1 row of every split dataset (/a has 10"));

  const auto whole = plan(kOnlyA, by_size(5, true));  // nothing to leave out: no warning
  CHECK(whole.pieces.at("/a") == ranges({{0, 5}, {5, 10}}));
  CHECK(whole.dropped == 0);
  CHECK(whole.warnings.empty());
}

TEST_CASE("--drop-last: needs --micro-batch-size, and refuses to leave nothing") {
  mb::SplitOptions n = cut_into(3);
  n.drop_last = true;
  CHECK(error_of(kOnlyA, n) == "--drop-last needs --micro-batch-size (-n cuts every row into N microbatches)");
  CHECK(error_of(kOnlyA, by_size(11, true)) ==
        "--drop-last leaves nothing: /a has 10 rows on its split axis, fewer than --micro-batch-size 11");
}

TEST_CASE("--drop-last with data-parallel slices splits the longest prefix of whole microbatches") {
  // 10 rows, D = 2, M = 2: the first 8 rows, as slices of 4 ([0,4) and [4,8)), each cut into 2 + 2
  const auto p = plan(kOnlyA, by_size(2, true, {2, false}));
  CHECK(p.dropped == 2);
  CHECK(p.pieces.at("/a") == std::vector<RowMap>{{{0, 2, 1}, {4, 2, 1}}, {{2, 2, 1}, {6, 2, 1}}});
  const auto aligned = plan(kOnlyA, by_size(2, true, {2, true}));  // slices: even and odd rows of [0, 8)
  CHECK(aligned.pieces.at("/a") == std::vector<RowMap>{{{0, 2, 2}, {1, 2, 2}}, {{4, 2, 2}, {5, 2, 2}}});
}

TEST_CASE("--drop-last with packed sequences leaves out whole sequences") {
  mb::SplitOptions o;
  o.micro_batch_size = 3;
  o.drop_last = true;
  const auto p = packed_plan(o, kValues);
  CHECK(p.dropped == 1);
  CHECK(p.sequences->runs == std::vector<mb::Range>{{0, 3}});
  CHECK(p.pieces.at("/tokens") == ranges({{0, 8}}));
  CHECK(p.pieces.at("/seq_id") == ranges({{0, 3}}));
  CHECK(p.pieces.at("/cu_q") == ranges({{0, 4}}));
}

namespace {
mb::SplitOptions dp_cut(std::uint64_t n, std::uint64_t degree, mb::FileLayout layout = mb::FileLayout::PerMicrobatch,
                        OnShort s = OnShort::Error) {
  mb::SplitOptions o = cut_into(n, s);
  o.dp = {degree, false};
  o.layout = layout;
  return o;
}
}  // namespace

TEST_CASE("packed sequences across data-parallel ranks: D*N cells, each file one cell of every rank") {
  // Tokens per sequence (q + k): 2, 12, 2, 4; D = 2, N = 2: one sequence per cell.
  const auto p = packed_plan(dp_cut(2, 2), kValues);
  REQUIRE(p.sequences);
  CHECK(p.count == 2);
  CHECK(p.sequences->ranks == 2);
  CHECK(p.sequences->runs == std::vector<mb::Range>{{0, 1}, {1, 2}, {2, 3}, {3, 4}});
  // File 0 holds cells (0, 0) and (1, 0): sequences 0 and 2; file 1 sequences 1 and 3.
  CHECK(p.pieces.at("/tokens") == std::vector<RowMap>{{{0, 1, 1}, {7, 1, 1}}, {{1, 6, 1}, {8, 2, 1}}});
  CHECK(p.pieces.at("/seq_id") == std::vector<RowMap>{{{0, 1, 1}, {2, 1, 1}}, {{1, 1, 1}, {3, 1, 1}}});
  CHECK(p.pieces.at("/cu_q") == std::vector<RowMap>{{{0, 2, 1}, {3, 1, 1}}, {{1, 2, 1}, {4, 1, 1}}});
  // Per rank: one file per cell, in cell order.
  const auto per_rank = packed_plan(dp_cut(2, 2, mb::FileLayout::PerRank), kValues);
  CHECK(per_rank.files() == 4);
  CHECK(per_rank.pieces.at("/tokens") == ranges({{0, 1}, {1, 7}, {7, 8}, {8, 10}}));
  CHECK(per_rank.pieces.at("/cu_q") == ranges({{0, 2}, {1, 3}, {2, 4}, {3, 5}}));
}

TEST_CASE("packed sequences across data-parallel ranks: every rank gets N microbatches, or none is cut") {
  // 4 sequences, D = 2: at most 2 microbatches per rank.
  CHECK(packed_error(dp_cut(3, 2), kValues) ==
        "cannot cut into 3 microbatches: /cu_k has 2 sequences per data-parallel rank (--on-short downsize or empty "
        "allows it)");
  const auto empty = packed_plan(dp_cut(3, 2, mb::FileLayout::PerMicrobatch, OnShort::Empty), kValues);
  CHECK(empty.sequences->runs.size() == 6);
  CHECK(empty.sequences->runs.back() == mb::Range{4, 4});
  CHECK(packed_plan(dp_cut(3, 2, mb::FileLayout::PerMicrobatch, OnShort::Downsize), kValues).count == 2);
  // 4 sequences do not divide among D = 3 ranks for --micro-batch-size, unless --drop-last
  mb::SplitOptions m{std::nullopt, 1, OnShort::Error, {3, false}};
  CHECK(packed_error(m, kValues) == "/cu_k has 4 sequences, not divisible by --dp-degree 3");
  m.drop_last = true;
  const auto dropped = packed_plan(m, kValues);
  CHECK(dropped.dropped == 1);
  CHECK(dropped.sequences->runs == std::vector<mb::Range>{{0, 1}, {1, 2}, {2, 3}});
  CHECK(packed_error({2, std::nullopt, OnShort::Error, {2, true}}, kValues).starts_with("--align does not apply"));
}

TEST_CASE("--balance attention: the largest cell's causal work is as small as it can be") {
  // By tokens the largest cell holds 6 tokens but 12 work; by work, 11.
  const auto t = root({dataset("cu", {8}), dataset("tok", {12})});
  const auto r = mb::resolve(t, mb::specs::parse_spec(R"({"cu": "offsets", "tok": {"packed": "/cu"}})", "s"), "s");
  const mb::OffsetsValues values{{"/cu", I64{0, 3, 4, 5, 6, 7, 8, 12}}};  // 3, 1, 1, 1, 1, 1, 4
  mb::SplitOptions o = cut_into(2);
  const auto tokens = mb::plan_split(t, r, o, values);
  CHECK(tokens.sequences->runs == std::vector<mb::Range>{{0, 4}, {4, 7}});  // 6 | 6 tokens, work 9 | 12
  CHECK(tokens.sequences->run_work == std::vector<std::uint64_t>{9, 12});
  o.balance = mb::Balance::Attention;
  const auto work = mb::plan_split(t, r, o, values);
  CHECK(work.sequences->runs == std::vector<mb::Range>{{0, 6}, {6, 7}});  // 8 | 4 tokens, work 11 | 10
  CHECK(work.sequences->run_work == std::vector<std::uint64_t>{11, 10});
  CHECK(work.sequences->work == 21);
}

TEST_CASE("--drop-last with --dp-degree keeps the first floor(L/(M*D))*M*D rows, whatever L mod D") {
  // 10 rows, M = 2, D = 3: the first 6 rows, slices [0,2) [2,4) [4,6), one microbatch.
  const auto p = plan(kOnlyA, by_size(2, true, {3, false}));
  CHECK(p.count == 1);
  CHECK(p.dropped == 4);
  CHECK(p.pieces.at("/a") == std::vector<RowMap>{{{0, 2, 1}, {2, 2, 1}, {4, 2, 1}}});
  REQUIRE(p.warnings.size() == 1);
  CHECK(p.warnings[0] ==
        "--drop-last left out the last 4 rows of every split dataset (/a has 10 rows on its split axis, 4 more than "
        "a multiple of --micro-batch-size 2 x --dp-degree 3)");
  // A batch shorter than M x D leaves nothing: a usage error (exit 2), as for M alone.
  try {
    plan(kOnlyA, by_size(4, true, {3, false}));
    FAIL("no error");
  } catch (const mb::Error& e) {
    CHECK(std::string(e.what()) ==
          "--drop-last leaves nothing: /a has 10 rows on its split axis, fewer than --micro-batch-size 4 x "
          "--dp-degree 3");
    CHECK(e.exit_code() == 2);
  }
}
