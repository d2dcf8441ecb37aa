#include "core/merge_plan.hpp"

#include <numeric>

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb {
namespace {

// Offsets, and the data they describe: concatenated in input order (or
// placed by PackedInputs::sequences), never by the data-parallel layout of
// the other datasets.
bool packed_family(const LeafRule& rule) {
  return rule.mode == LeafRule::Mode::Offsets || rule.mode == LeafRule::Mode::Packed ||
         rule.mode == LeafRule::Mode::PerSequence;
}

// Offsets: input 0's rows as they are, every later input's rows after its
// leading 0 (which the merged offsets hold once). A later input without
// sequences (its offsets only [0]) fills no rows: its map is empty.
MergedLeaf plan_offsets(const NodeInfo& node, const std::vector<std::uint64_t>& lengths) {
  MergedLeaf leaf{0, node.shape, {}, {}, {}, {}, false, {}, {}};
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] == 0)
      throw Error(fmt::format("{}: microbatch {} holds no offsets (they start with 0)", node.path, i));
    const std::uint64_t skip = i == 0 ? 0 : 1;
    leaf.maps.emplace_back();
    append_rows(leaf.maps.back(), at, lengths[i] - skip);
    at += lengths[i] - skip;
  }
  leaf.dims[0] = at;
  return leaf;
}

MergedLeaf plan_rows(const NodeInfo& node, std::size_t axis, const std::vector<std::uint64_t>& lengths,
                     const DataParallel& dp, FileLayout layout) {
  MergedLeaf leaf{axis, node.shape, merge_maps(lengths, dp, layout, node.path), {}, {}, {}, false, {}, {}};
  std::uint64_t total = 0;
  for (auto n : lengths) total += n;
  leaf.dims[axis] = total;
  return leaf;
}

// Context parallelism: the lengths of the files as they were before the CP
// cut (per rank and microbatch), from every CP rank's file, which holds as
// many rows (packed data: document_lengths gives them).
std::vector<std::uint64_t> base_lengths(const NodeInfo& node, const std::vector<std::uint64_t>& lengths,
                                        const FileGrid& grid) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t b = 0; b < grid.ranks * grid.microbatches; ++b) {
    const std::uint64_t first = lengths[grid.file_of(b, 0)];
    for (std::uint64_t r = 1; r < grid.cp; ++r)
      if (lengths[grid.file_of(b, r)] != first)
        throw Error(fmt::format("{}: input {} (CP rank {}) holds {} rows, input {} (CP rank 0 of the same "
                                "microbatch) {}: the CP ranks of a split hold as many",
                                node.path, grid.file_of(b, r), r, lengths[grid.file_of(b, r)], grid.file_of(b, 0),
                                first));
    out.push_back(first);
  }
  return out;
}

// The lengths of the documents of base file `b` (one rank's microbatch
// before the CP cut) that the offsets at `path` describe: every CP rank's
// file holds its share of each (L/C tokens, or with --cp-pad its real
// tokens), and their sum is the document.
std::vector<std::uint64_t> document_lengths(const std::string& path, const PackedInputs& in, const FileGrid& grid,
                                            std::uint64_t b) {
  const std::vector<Offsets>& all = in.offsets.at(path);
  const Offsets& first = all.at(grid.file_of(b, 0));
  std::vector<std::uint64_t> out(first.size() - 1, 0);
  for (std::uint64_t r = 0; r < grid.cp; ++r) {
    const Offsets& share = all.at(grid.file_of(b, r));
    if (share.size() != first.size())
      throw Error(fmt::format("{}: input {} (CP rank {}) holds {} sequences, input {} (CP rank 0 of the same "
                              "microbatch) {}: the CP ranks of a split hold as many",
                              path, grid.file_of(b, r), r, share.size() - 1, grid.file_of(b, 0), first.size() - 1));
    for (std::size_t k = 0; k + 1 < share.size(); ++k)
      if (__builtin_add_overflow(out[k], share[k + 1] - share[k], &out[k]))
        throw Error(fmt::format("{}: sequence {} of input {} holds more than {} tokens", path, k, grid.file_of(b, 0),
                                UINT64_MAX));
  }
  return out;
}

// Each CP rank's share of every document is what the split gives it (half
// of two equal stripes, or with --cp-pad its real tokens of the padded
// document, and beside them the padded document's share): else the files
// are not a CP split's, and their tokens cannot be put back.
void check_shares(const std::string& path, const PackedInputs& in, const FileGrid& grid, std::uint64_t b,
                  const std::vector<std::uint64_t>& lengths) {
  std::vector<std::uint64_t> padded;
  for (const std::uint64_t length : lengths) padded.push_back(padded_length(length, grid.cp) / grid.cp);
  const Offsets& first = in.offsets.at(path).at(grid.file_of(b, 0));
  for (std::uint64_t r = 1; r < grid.cp && !in.pad; ++r)  // the ranks' shares are equal: say which disagree
    for (std::size_t k = 0; k < lengths.size(); ++k) {
      const Offsets& share = in.offsets.at(path).at(grid.file_of(b, r));
      if (share[k + 1] - share[k] != first[k + 1] - first[k])
        throw Error(fmt::format("{}: input {} (CP rank {}) holds {} tokens of sequence {}, input {} (CP rank 0 of "
                                "the same microbatch) {}: the CP ranks of a split hold as many",
                                path, grid.file_of(b, r), r, share[k + 1] - share[k], k, grid.file_of(b, 0),
                                first[k + 1] - first[k]));
    }
  for (std::uint64_t r = 0; r < grid.cp; ++r) {
    const std::uint64_t f = grid.file_of(b, r);
    const Offsets& share = in.offsets.at(path).at(f);
    for (std::size_t k = 0; k < lengths.size(); ++k) {
      const std::uint64_t held = share[k + 1] - share[k];
      const bool exact = in.pad ? held == real_share(lengths[k], grid.cp, r)
                                : lengths[k] % (2 * grid.cp) == 0 && held == lengths[k] / grid.cp;
      if (!exact)
        throw Error(fmt::format("{}: input {} (CP rank {}) holds {} tokens of sequence {} of {}, not its share in "
                                "a CP split{}",
                                path, f, r, held, k, lengths[k], in.pad ? " with --cp-pad" : ""));
    }
    if (in.pad && in.padded.at(path).at(f) != offsets_of(padded))
      throw Error(fmt::format("{}_padded: input {} (CP rank {}) does not hold the padded offsets of its documents",
                              path, f, r));
  }
}

// Packed data under CP: every input's rows are, of each document, the
// rank's zigzag tokens (with --cp-pad, its real tokens of the padded
// document, and `placed` says which of its rows hold them).
void place_documents(const std::string& path, const std::string& offsets, const PackedInputs& in,
                     const FileGrid& grid, MergedLeaf& leaf) {
  if (in.pad) leaf.placed.resize(grid.files());
  for (std::uint64_t f = 0; f < grid.files(); ++f) {
    const std::uint64_t rank = grid.cp_rank_of(f);
    const std::vector<std::uint64_t> lengths = document_lengths(offsets, in, grid, grid.base_of(f));
    check_shares(offsets, in, grid, grid.base_of(f), lengths);
    std::vector<Range> documents;
    try {
      documents = documents_along(lengths, leaf.maps[f]);  // the microbatch's rows, all documents whole
    } catch (const Error& e) {
      throw Error(fmt::format("{}: input {} (CP rank {}): {}", path, f, rank, e.what()));
    }
    if (!in.pad) {
      leaf.maps[f] = zigzag(documents, grid.cp, rank);
      continue;
    }
    PaddedCut cut = padded_zigzag(documents, grid.cp, rank);
    if (cut.file.length != leaf.held.at(f))
      throw Error(fmt::format("{}: input {} (CP rank {}) holds {} rows, but its documents padded give {}", path, f,
                              rank, leaf.held.at(f), cut.file.length));
    leaf.maps[f] = std::move(cut.batch);
    leaf.placed[f] = std::move(cut.file.rows);
  }
}

// Every document's length, base file after base file.
std::vector<std::uint64_t> all_documents(const std::string& path, const PackedInputs& in, const FileGrid& grid) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t b = 0; b < grid.ranks * grid.microbatches; ++b) {
    const auto lengths = document_lengths(path, in, grid, b);
    out.insert(out.end(), lengths.begin(), lengths.end());
  }
  return out;
}

// A leaf of a CP split: planned as the files before the CP cut, then given
// to every CP rank's file.
MergedLeaf plan_cp_leaf(const NodeInfo& node, const LeafRule& rule, const std::vector<std::uint64_t>& lengths,
                        const DataParallel& dp, FileLayout layout, const FileGrid& grid, const PackedInputs& in) {
  const bool packed = rule.mode == LeafRule::Mode::Packed;
  auto base = base_lengths(node, lengths, grid);
  if (packed)
    for (std::uint64_t b = 0; b < base.size(); ++b) {
      const auto documents = document_lengths(rule.offsets, in, grid, b);
      base[b] = std::accumulate(documents.begin(), documents.end(), std::uint64_t{0});
    }
  const bool in_order = packed_family(rule);
  const bool offsets = rule.mode == LeafRule::Mode::Offsets;
  const MergedLeaf merged = offsets ? plan_offsets(node, base)
                                    : plan_rows(node, static_cast<std::size_t>(rule.axis), base,
                                                in_order ? DataParallel{} : dp,
                                                in_order ? FileLayout::PerMicrobatch : layout);
  // With --cp-pad every CP rank's offsets are its own: the merged ones are
  // the documents' lengths (each input writes its rows of them).
  const bool own = packed || rule.sequence_axis || (offsets && in.pad);
  MergedLeaf leaf{merged.axis, merged.dims, {}, lengths, {}, {}, !own, {}, {}};
  for (std::uint64_t f = 0; f < grid.files(); ++f) leaf.maps.push_back(merged.maps[grid.base_of(f)]);
  if (offsets && in.pad) leaf.values = offsets_of(all_documents(node.path, in, grid));
  if (packed) place_documents(node.path, rule.offsets, in, grid, leaf);
  if (rule.sequence_axis) {
    const auto axis = static_cast<std::size_t>(*rule.sequence_axis);
    if (node.shape[axis] % 2 != 0)
      throw Error(fmt::format("{}: {} positions on its sequence axis {}, not the two equal stripes of a CP split",
                              node.path, node.shape[axis], axis));
    leaf.sequence_axis = axis;
    leaf.dims[axis] = node.shape[axis] * grid.cp;
    for (std::uint64_t f = 0; f < grid.files(); ++f)
      leaf.positions.push_back(zigzag({{0, leaf.dims[axis]}}, grid.cp, grid.cp_rank_of(f)));
  }
  return leaf;
}

// Packed sequences placed out of input order: the batch's offsets at
// `path`, from every file's document lengths (document_lengths) put where
// its sequences go. Refuses placements that overlap or leave a gap.
Offsets placed_offsets(const std::string& path, const PackedInputs& in, const FileGrid& grid) {
  std::uint64_t count = 0;
  for (const RowMap& seqs : in.sequences) count += rows_in(seqs);
  std::vector<std::uint64_t> lengths(count);
  std::vector<bool> seen(count, false);
  for (std::uint64_t b = 0; b < in.sequences.size(); ++b) {
    const std::vector<std::uint64_t> documents = document_lengths(path, in, grid, b);
    if (documents.size() != rows_in(in.sequences[b]))
      throw Error(fmt::format("{}: input {} holds {} sequences, but the split's manifest places {} there", path,
                              grid.file_of(b, 0), documents.size(), rows_in(in.sequences[b])));
    std::uint64_t k = 0;
    for (const Segment& seg : in.sequences[b])
      for (std::uint64_t j = 0; j < seg.count; ++j, ++k) {
        const std::uint64_t at = seg.begin + j;
        if (at >= count || seen[at])
          throw Error(fmt::format("{}: the split's manifest places sequences of input {} where no sequence or "
                                  "another one goes",
                                  path, grid.file_of(b, 0)));
        seen[at] = true;
        lengths[at] = documents[k];
      }
  }
  return offsets_of(lengths);
}

// Per file before the CP cut, the rows of the merged dataset its rows fill.
std::vector<RowMap> placed_rows(const LeafRule& rule, const PackedInputs& in, const Offsets& tokens) {
  std::vector<RowMap> out(in.sequences.size());
  for (std::size_t b = 0; b < out.size(); ++b) {
    if (rule.mode == LeafRule::Mode::Offsets && b == 0) append_rows(out[b], 0, 1);  // the leading 0, held once
    for (const Segment& seg : in.sequences[b]) {
      if (rule.mode == LeafRule::Mode::Offsets) append_rows(out[b], seg.begin + 1, seg.count);
      if (rule.mode == LeafRule::Mode::PerSequence) append_rows(out[b], seg.begin, seg.count);
      if (rule.mode == LeafRule::Mode::Packed)
        append_rows(out[b], tokens[seg.begin], tokens[seg.begin + seg.count] - tokens[seg.begin]);
    }
  }
  return out;
}

// A packed-family leaf whose sequences PackedInputs::sequences places.
MergedLeaf plan_placed_leaf(const NodeInfo& node, const LeafRule& rule, const std::vector<std::uint64_t>& lengths,
                            const FileGrid& grid, const PackedInputs& in) {
  const bool packed = rule.mode == LeafRule::Mode::Packed;
  const auto axis = static_cast<std::size_t>(rule.axis);
  const bool own = packed || (rule.mode == LeafRule::Mode::Offsets && in.pad);  // see plan_cp_leaf
  MergedLeaf leaf{axis, node.shape, {}, lengths, {}, {}, grid.cp > 1 && !own, {}, {}};
  const Offsets tokens = placed_offsets(rule.mode == LeafRule::Mode::Offsets ? node.path : rule.offsets, in, grid);
  leaf.dims[axis] = rule.mode == LeafRule::Mode::Offsets ? tokens.size()
                    : packed                             ? tokens.back()
                                                         : tokens.size() - 1;
  if (rule.mode == LeafRule::Mode::Offsets) leaf.values = tokens;
  const std::vector<RowMap> base = placed_rows(rule, in, tokens);
  for (std::uint64_t f = 0; f < lengths.size(); ++f) leaf.maps.push_back(base.at(grid.base_of(f)));
  if (packed && grid.cp > 1) place_documents(node.path, rule.offsets, in, grid, leaf);
  for (std::uint64_t f = 0; f < lengths.size() && leaf.placed.empty(); ++f) {  // (place_documents checks padded files)
    // Every input's offsets but the first's hold their leading 0 once more.
    const std::uint64_t again = rule.mode == LeafRule::Mode::Offsets && grid.base_of(f) != 0 ? 1 : 0;
    if (rows_in(leaf.maps[f]) + again != lengths[f])
      throw Error(fmt::format("{}: input {} holds {} rows, but the sequences the split's manifest places there "
                              "give {}",
                              node.path, f, lengths[f], rows_in(leaf.maps[f]) + again));
  }
  return leaf;
}

FileGrid cp_grid(const InputLengths& lengths, const DataParallel& dp, FileLayout layout, std::uint64_t degree) {
  FileGrid grid{layout == FileLayout::PerRank ? dp.degree : 1, degree, 0};
  const std::uint64_t inputs = lengths.empty() ? 0 : lengths.begin()->second.size();
  if (inputs % (grid.ranks * grid.cp) != 0)
    throw Error(fmt::format("{} inputs do not divide into {} CP ranks{}", inputs, grid.cp,
                            grid.ranks > 1 ? fmt::format(" of {} data-parallel ranks", grid.ranks) : ""));
  grid.microbatches = inputs / (grid.ranks * grid.cp);
  return grid;
}

}  // namespace

std::size_t MergePlan::twin(std::size_t input) const {
  return grid.cp == 1 ? input : grid.file_of(grid.base_of(input), 0);
}

const MergedLeaf* MergePlan::leaf(const std::string& path) const {
  const auto it = leaves.find(path);
  return it == leaves.end() ? nullptr : &it->second;
}

std::vector<const NodeInfo*> cut_datasets(const NodeInfo& first, const Resolution& resolution) {
  std::vector<const NodeInfo*> out;
  for_each_node(first, [&](const NodeInfo& node) {
    if (!node.is_group() && !node.is_further_name() && resolution.dataset_rule(node.path).cuts_rows())
      out.push_back(&node);
  });
  return out;
}

MergePlan plan_merge(const NodeInfo& first, const Resolution& resolution, const InputLengths& lengths,
                     const DataParallel& dp, FileLayout layout, const PackedInputs& cp) {
  MergePlan plan;
  if (cp.degree > 1) plan.grid = cp_grid(lengths, dp, layout, cp.degree);
  const std::uint64_t inputs = lengths.empty() ? 0 : lengths.begin()->second.size();
  const FileGrid placing = cp.degree > 1 ? plan.grid : FileGrid{1, 1, inputs};
  for (const NodeInfo* node : cut_datasets(first, resolution)) {
    const LeafRule& rule = resolution.dataset_rule(node->path);
    const auto& per_input = lengths.at(node->path);
    if (packed_family(rule) && !cp.sequences.empty()) {
      plan.leaves[node->path] = plan_placed_leaf(*node, rule, per_input, placing, cp);
      continue;
    }
    if (cp.degree > 1) {
      plan.leaves[node->path] = plan_cp_leaf(*node, rule, per_input, dp, layout, plan.grid, cp);
      continue;
    }
    const bool in_order = packed_family(rule);
    MergedLeaf leaf = rule.mode == LeafRule::Mode::Offsets
                          ? plan_offsets(*node, per_input)
                          : plan_rows(*node, static_cast<std::size_t>(rule.axis), per_input,
                                      in_order ? DataParallel{} : dp, in_order ? FileLayout::PerMicrobatch : layout);
    leaf.held = per_input;
    plan.leaves[node->path] = std::move(leaf);
  }
  bool cut = false;
  for (const auto& entry : plan.leaves) cut = cut || !entry.second.shared;
  if (cp.degree > 1 && !cut)
    throw Error(fmt::format("--cp-degree {} has nothing to put back: no dataset's spec marks a sequence axis and no "
                            "dataset is packed",
                            cp.degree));
  return plan;
}

std::vector<std::uint64_t> input_bytes(const NodeInfo& first, const MergePlan& plan, std::size_t inputs) {
  std::vector<std::uint64_t> bytes(inputs, 0);
  for_each_node(first, [&](const NodeInfo& ds) {
    if (ds.is_group() || ds.is_further_name() || ds.null_space) return;
    const MergedLeaf* leaf = plan.leaf(ds.path);
    if (!leaf) {
      for (auto& b : bytes) b += element_count(ds.shape) * ds.element_size;
      return;
    }
    std::uint64_t row = ds.element_size;  // bytes of one row along the cut axis (and one position along CP's)
    for (std::size_t d = 0; d < leaf->dims.size(); ++d)
      if (d != leaf->axis && d != leaf->sequence_axis) row *= leaf->dims[d];
    for (std::size_t i = 0; i < inputs && i < leaf->maps.size(); ++i)
      bytes[i] += rows_in(leaf->maps[i]) * row * (leaf->sequence_axis ? rows_in(leaf->positions[i]) : 1);
  });
  return bytes;
}

}  // namespace mb
