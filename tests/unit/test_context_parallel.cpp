#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/context_parallel.hpp"
#include "core/error.hpp"
#include "core/merge_plan.hpp"
#include "core/plan.hpp"
#include "helpers.hpp"
#include "specs/parse.hpp"

using namespace mb::test;
using mb::RowMap;

namespace {

mb::PackedInputs cp_inputs(std::uint64_t degree, std::map<std::string, std::vector<mb::Offsets>> offsets = {}) {
  mb::PackedInputs in;
  in.degree = degree;
  in.offsets = std::move(offsets);
  return in;
}

}  // namespace

namespace {

// The rule as the issue writes it, transcribed literally: cut the sequence
// into 2C stripes of S/(2C); CP rank r holds stripes r and 2C-1-r, in order.
std::vector<std::uint64_t> literal_zigzag(std::uint64_t S, std::uint64_t C, std::uint64_t r) {
  std::vector<std::vector<std::uint64_t>> chunks(2 * C);
  for (std::uint64_t p = 0; p < S; ++p) chunks[p / (S / (2 * C))].push_back(p);
  std::vector<std::uint64_t> out = chunks[r];
  out.insert(out.end(), chunks[2 * C - 1 - r].begin(), chunks[2 * C - 1 - r].end());
  return out;
}

std::vector<std::uint64_t> expand(const RowMap& map) {
  std::vector<std::uint64_t> out;
  for (const auto& s : map)
    for (std::uint64_t k = 0; k < s.count; ++k) out.push_back(s.begin + k * s.stride);
  return out;
}

}  // namespace

TEST_CASE("zigzag: rank r holds stripes r and 2C-1-r, every position exactly once, the inverse is the argsort") {
  for (std::uint64_t C = 1; C <= 4; ++C)
    for (std::uint64_t S : {std::uint64_t{0}, 2 * C, 4 * C, 6 * C, 16 * C}) {
      CAPTURE(C);
      CAPTURE(S);
      std::vector<std::uint64_t> order;  // the positions of all ranks, rank after rank
      for (std::uint64_t r = 0; r < C; ++r) {
        const auto held = expand(mb::zigzag({{0, S}}, C, r));
        CHECK(held == literal_zigzag(S, C, r));
        order.insert(order.end(), held.begin(), held.end());
      }
      std::vector<std::uint64_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      std::vector<std::uint64_t> all(S);
      std::iota(all.begin(), all.end(), 0);
      CHECK(sorted == all);  // a permutation
      // Putting the ranks' positions back: the merged sequence at position
      // order[k] takes element k, i.e. element argsort(order)[p] lands at p.
      std::vector<std::uint64_t> argsort(S);
      std::iota(argsort.begin(), argsort.end(), 0);
      std::sort(argsort.begin(), argsort.end(), [&](auto a, auto b) { return order[a] < order[b]; });
      std::vector<std::uint64_t> back(S);
      for (std::uint64_t p = 0; p < S; ++p) back[p] = order[argsort[p]];
      CHECK(back == all);
    }
}

TEST_CASE("zigzag of the README: S = 8, C = 2") {
  CHECK(expand(mb::zigzag({{0, 8}}, 2, 0)) == std::vector<std::uint64_t>{0, 1, 6, 7});
  CHECK(expand(mb::zigzag({{0, 8}}, 2, 1)) == std::vector<std::uint64_t>{2, 3, 4, 5});
  // Adjacent chunks are one segment: rank 1's two chunks touch.
  CHECK(mb::zigzag({{0, 8}}, 2, 1) == RowMap{{2, 4, 1}});
}

TEST_CASE("per-document zigzag: every document cut on its own, in batch coordinates") {
  const mb::Offsets offsets{0, 4, 12, 24, 28};
  const auto docs = mb::documents_of(offsets, {1, 3});
  CHECK(docs == std::vector<mb::Range>{{4, 12}, {12, 24}});
  for (std::uint64_t r = 0; r < 2; ++r) {
    std::vector<std::uint64_t> expected;
    for (const auto& d : docs)
      for (auto p : literal_zigzag(d.size(), 2, r)) expected.push_back(d.begin + p);
    CHECK(expand(mb::zigzag(docs, 2, r)) == expected);
  }
  // A CP rank's own offsets (L/C per document) put back from row 4.
  CHECK(mb::documents_along({8, 12}, RowMap{{4, 20, 1}}) == docs);
  // Laid along two cells' rows (data-parallel ranks), none cut.
  CHECK(mb::documents_along({8, 12}, RowMap{{4, 8, 1}, {30, 12, 1}}) == std::vector<mb::Range>{{4, 12}, {30, 42}});
  CHECK_THROWS_AS(mb::documents_along({8, 12}, RowMap{{4, 6, 1}, {30, 14, 1}}), mb::Error);
}

TEST_CASE("lengths that 2C does not divide are refused, naming what") {
  CHECK(message_of([] { mb::require_zigzag_divisible(6, 2, "/x has 6 positions"); }) ==
        "/x has 6 positions, not divisible into 2 x --cp-degree 2 = 4 equal stripes");
  CHECK_NOTHROW(mb::require_zigzag_divisible(8, 2, "/x"));
  CHECK(message_of([] { mb::require_documents_divisible({0, 4, 10}, 2, "/cu"); })
            .find("/cu: sequence 1 has 6 tokens, not divisible into 2 x --cp-degree 2 = 4") == 0);
}

TEST_CASE("causal work: zigzag gives every rank the ideal, a contiguous cut does not") {
  // Sum over positions of position + 1, by hand for S = 8, C = 2.
  CHECK(mb::causal_work({{0, 8, 1}}) == 36);
  CHECK(mb::causal_work(mb::zigzag({{0, 8}}, 2, 0)) == 1 + 2 + 7 + 8);
  const mb::CpLoad load = mb::cp_load("/cu", {8, 16}, 2);
  CHECK(load.total_work == 36 + 136);
  CHECK(load.tokens == std::vector<std::uint64_t>{12, 12});
  CHECK(load.work == std::vector<std::uint64_t>{86, 86});
  CHECK(load.contiguous == std::vector<std::uint64_t>{10 + 36, 26 + 100});
}

TEST_CASE("the file grid: rank, then CP rank, then microbatch") {
  const mb::FileGrid g{2, 3, 4};
  CHECK(g.files() == 24);
  CHECK(g.rank_of(13) == 1);
  CHECK(g.cp_rank_of(13) == 0);
  CHECK(g.microbatch_of(13) == 1);
  CHECK(g.base_of(13) == 5);
  for (std::uint64_t f = 0; f < g.files(); ++f) CHECK(g.file_of(g.base_of(f), g.cp_rank_of(f)) == f);
}

namespace {

struct Padded {
  mb::NodeInfo tree = root({dataset("ids", {4, 8}), dataset("pos", {3, 4, 8}), dataset("label", {4})});
  mb::Resolution resolution = mb::resolve(
      tree,
      mb::specs::parse_spec(R"({"ids": {"split_axis": 0, "sequence_axis": -1},
                                "pos": {"split_axis": 1, "sequence_axis": 2}, "label": 0})",
                            "s"),
      "s");
};

}  // namespace

TEST_CASE("split plan under CP: rows per microbatch, positions per CP rank, the merge plan inverts it") {
  const Padded p;
  for (std::uint64_t degree : {1, 2})
    for (bool per_rank : {false, true})
      for (std::uint64_t C : {2, 4}) {
        CAPTURE(degree);
        CAPTURE(per_rank);
        CAPTURE(C);
        if (per_rank && degree == 1) continue;
        mb::SplitOptions o{2, std::nullopt, mb::OnShort::Error, {degree, false},
                           per_rank ? mb::FileLayout::PerRank : mb::FileLayout::PerMicrobatch};
        o.cp_degree = C;
        const mb::SplitPlan plan = mb::plan_split(p.tree, p.resolution, o);
        const mb::FileGrid grid = plan.grid();
        REQUIRE(plan.files() == (per_rank ? degree : 1) * C * 2);
        for (std::uint64_t f = 0; f < plan.files(); ++f) {
          CHECK(plan.pieces.at("/ids")[f] == plan.pieces.at("/ids")[grid.file_of(grid.base_of(f), 0)]);
          CHECK(plan.positions.at("/ids")[f] == mb::zigzag({{0, 8}}, C, grid.cp_rank_of(f)));
        }
        CHECK(plan.positions.count("/label") == 0);
        mb::InputLengths lengths;
        for (const auto& [path, maps] : plan.pieces) lengths[path] = lengths_of(maps);
        // A 2-D view of /ids as one input holds it: (rows, S/C).
        const auto input = root({dataset("ids", {mb::rows_in(plan.pieces.at("/ids")[0]), 8 / C}),
                                 dataset("pos", {3, mb::rows_in(plan.pieces.at("/pos")[0]), 8 / C}),
                                 dataset("label", {mb::rows_in(plan.pieces.at("/label")[0])})});
        const mb::MergePlan merge = mb::plan_merge(input, p.resolution, lengths, o.dp, o.layout, cp_inputs(C));
        const mb::MergedLeaf& ids = *merge.leaf("/ids");
        CHECK(ids.dims == mb::Shape{4, 8});
        CHECK(ids.maps == plan.pieces.at("/ids"));
        CHECK(ids.positions == plan.positions.at("/ids"));
        CHECK(!ids.shared);
        CHECK(merge.leaf("/label")->shared);
        CHECK(merge.leaf("/pos")->dims == mb::Shape{3, 4, 8});
      }
}

TEST_CASE("packed under CP: per-document tokens per rank, offsets shared, merge inverts from each rank's offsets") {
  const auto t = root({dataset("tok", {28}), dataset("cu", {5}), dataset("id", {4})});
  const auto res = mb::resolve(
      t, mb::specs::parse_spec(R"({"tok": {"packed": "/cu"}, "cu": "offsets", "id": {"per_sequence": "/cu"}})", "s"),
      "s");
  mb::SplitOptions o{2, std::nullopt, mb::OnShort::Error, {}, mb::FileLayout::PerMicrobatch};
  o.cp_degree = 2;
  const mb::OffsetsValues values{{"/cu", std::vector<std::int64_t>{0, 4, 12, 24, 28}}};
  const mb::SplitPlan plan = mb::plan_split(t, res, o, values);
  const mb::Offsets offsets{0, 4, 12, 24, 28};
  const mb::FileGrid grid = plan.grid();
  std::vector<std::uint64_t> seen;
  for (std::uint64_t f = 0; f < plan.files(); ++f) {
    const auto run = plan.sequences->runs[grid.microbatch_of(f)];
    CHECK(plan.pieces.at("/tok")[f] == mb::zigzag(mb::documents_of(offsets, run), 2, grid.cp_rank_of(f)));
    const auto rows = expand(plan.pieces.at("/tok")[f]);
    seen.insert(seen.end(), rows.begin(), rows.end());
  }
  std::sort(seen.begin(), seen.end());
  std::vector<std::uint64_t> all(28);
  std::iota(all.begin(), all.end(), 0);
  CHECK(seen == all);
  // Each rank's own offsets: the documents' halves, rebased.
  std::vector<mb::Offsets> shares;
  for (std::uint64_t f = 0; f < plan.files(); ++f) {
    const auto run = plan.sequences->runs[grid.microbatch_of(f)];
    mb::Offsets share{0};
    for (auto s = run.begin; s < run.end; ++s) share.push_back(share.back() + (offsets[s + 1] - offsets[s]) / 2);
    shares.push_back(share);
  }
  mb::InputLengths lengths;
  for (const auto& [path, maps] : plan.pieces) lengths[path] = lengths_of(maps);
  const mb::MergePlan merge =
      mb::plan_merge(t, res, lengths, o.dp, o.layout, cp_inputs(2, {{"/cu", shares}}));
  CHECK(merge.leaf("/tok")->maps == plan.pieces.at("/tok"));
  CHECK(merge.leaf("/tok")->dims == mb::Shape{28});
  CHECK(merge.leaf("/cu")->shared);
  CHECK(merge.leaf("/id")->shared);
  CHECK(merge.twin(3) == 1);
  // A rank's document share that is odd cannot come from a CP split.
  shares[0][1] = 1;
  shares[0][2] += -1;
  CHECK(message_of([&] { mb::plan_merge(t, res, lengths, o.dp, o.layout, cp_inputs(2, {{"/cu", shares}})); })
            .find("/cu: input 2 (CP rank 1) holds 2 tokens of sequence 0, input 0 (CP rank 0 of the same "
                  "microbatch) 1") != std::string::npos);
  // Equal shares that are not a CP split's (odd halves of a document of 2 tokens per rank).
  shares[2][1] = 1;
  shares[2][2] += -1;
  CHECK(message_of([&] { mb::plan_merge(t, res, lengths, o.dp, o.layout, cp_inputs(2, {{"/cu", shares}})); })
            .find("/cu: input 0 (CP rank 0) holds 1 tokens of sequence 0 of 2, not its share in a CP split") !=
        std::string::npos);
  // Document lengths that 2C does not divide: refused at split, never rounded down.
  o.cp_degree = 4;
  CHECK(message_of([&] { mb::plan_split(t, res, o, values); }).find("/cu: sequence 0 has 4 tokens") == 0);
}

TEST_CASE("CP errors: nothing to cut, unequal CP ranks, inputs that do not divide") {
  const Padded p;
  mb::SplitOptions o{2, std::nullopt, mb::OnShort::Error, {}, mb::FileLayout::PerMicrobatch};
  o.cp_degree = 2;
  const auto plain = mb::resolve(p.tree, mb::specs::parse_spec("null", "s"), "s");
  CHECK(message_of([&] { mb::plan_split(p.tree, plain, o); }).find("--cp-degree 2 has nothing to cut") == 0);
  o.cp_degree = 3;
  CHECK(message_of([&] { mb::plan_split(p.tree, p.resolution, o); }) ==
        "/ids has 8 positions on its sequence axis 1, not divisible into 2 x --cp-degree 3 = 6 equal stripes");
  const auto input = root({dataset("ids", {2, 4}), dataset("pos", {3, 2, 4}), dataset("label", {2})});
  const mb::InputLengths lengths{{"/ids", {2, 2, 2, 1}}, {"/pos", {2, 2, 2, 2}}, {"/label", {2, 2, 2, 2}}};
  CHECK(message_of([&] { mb::plan_merge(input, p.resolution, lengths, {}, mb::FileLayout::PerMicrobatch, cp_inputs(2)); })
            .find("/ids: input 3 (CP rank 1) holds 1 rows, input 1 (CP rank 0 of the same microbatch) 2") == 0);
  const mb::InputLengths three{{"/ids", {2, 2, 2}}, {"/pos", {2, 2, 2}}, {"/label", {2, 2, 2}}};
  CHECK(message_of([&] { mb::plan_merge(input, p.resolution, three, {}, mb::FileLayout::PerMicrobatch, cp_inputs(2)); }) ==
        "3 inputs do not divide into 2 CP ranks");
  CHECK(message_of([&] { mb::resolve(p.tree, mb::specs::parse_spec(R"({"ids": {"split_axis": 0, "sequence_axis": 0},
      "*": null})", "s"), "s"); }).find("the sequence axis is its split axis 0") != std::string::npos);
}

namespace {

// Transformer Engine's thd_get_partitioned_indices(cu_seqlens_padded, total_tokens, cp_size, rank), written
// from its documented semantics: of every padded sequence, chunks `rank` and 2 * cp_size - 1 - rank of
// 2 * cp_size equal chunks, as indices into the padded batch.
std::vector<std::uint64_t> te_partitioned_indices(const std::vector<std::uint64_t>& cu_seqlens_padded,
                                                  std::uint64_t cp_size, std::uint64_t rank) {
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i + 1 < cu_seqlens_padded.size(); ++i) {
    const std::uint64_t seqlen = cu_seqlens_padded[i + 1] - cu_seqlens_padded[i];
    const std::uint64_t chunk = seqlen / (2 * cp_size);
    for (const std::uint64_t c : {rank, 2 * cp_size - 1 - rank})
      for (std::uint64_t k = 0; k < chunk; ++k) out.push_back(cu_seqlens_padded[i] + c * chunk + k);
  }
  return out;
}

}  // namespace

TEST_CASE("--cp-pad: each rank's file holds exactly the positions TE's THD partitioning selects") {
  std::mt19937 rng(5);
  constexpr std::uint64_t kPad = UINT64_MAX;
  for (int trial = 0; trial < 300; ++trial) {
    const std::uint64_t degree = 1 + rng() % 4;
    std::vector<mb::Range> documents;
    std::uint64_t at = 7;  // the documents start anywhere in the batch
    for (int d = 0, n = 1 + static_cast<int>(rng() % 6); d < n; ++d) {
      const std::uint64_t length = rng() % 5 == 0 ? 0 : rng() % 23;
      documents.push_back({at, at + length});
      at += length;
    }
    // The padded batch: each document's batch rows, then its pads; and cu_seqlens_padded.
    std::vector<std::uint64_t> padded, cu{0};
    for (const auto& d : documents) {
      for (auto row = d.begin; row < d.end; ++row) padded.push_back(row);
      const std::uint64_t p = mb::padded_length(d.size(), degree);
      CHECK(p % (2 * degree) == 0);
      CHECK(p - d.size() < 2 * degree);
      padded.resize(padded.size() + (p - d.size()), kPad);
      cu.push_back(cu.back() + p);
    }
    for (std::uint64_t r = 0; r < degree; ++r) {
      std::vector<std::uint64_t> expected;
      for (auto i : te_partitioned_indices(cu, degree, r)) expected.push_back(padded[i]);
      const mb::PaddedCut cut = mb::padded_zigzag(documents, degree, r);
      REQUIRE(cut.file.length == expected.size());
      REQUIRE(cut.batch.size() == cut.file.rows.size());
      std::vector<std::uint64_t> file(cut.file.length, kPad);
      for (std::size_t k = 0; k < cut.batch.size(); ++k) {
        REQUIRE(cut.batch[k].count == cut.file.rows[k].count);
        for (std::uint64_t j = 0; j < cut.batch[k].count; ++j)
          file[cut.file.rows[k].begin + j] = cut.batch[k].begin + j;
      }
      CHECK(file == expected);
      // The pads are the complement of the file rows; real shares count the rest.
      std::uint64_t pads = 0, real = 0;
      for (const auto& s : mb::complement(cut.file.rows, cut.file.length)) pads += s.count;
      for (const auto& d : documents) real += mb::real_share(d.size(), degree, r);
      CHECK(real == mb::rows_in(cut.batch));
      CHECK(pads + real == cut.file.length);
      CHECK(static_cast<std::uint64_t>(std::count(expected.begin(), expected.end(), kPad)) == pads);
    }
  }
  // Without padding, the cut is the zigzag.
  CHECK(mb::padded_zigzag({{0, 8}, {8, 12}}, 2, 1).batch == mb::zigzag({{0, 8}, {8, 12}}, 2, 1));
}
