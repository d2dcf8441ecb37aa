// The plan's context-parallel step: every file becomes one per CP rank
// (zigzag positions and tokens, --cp-pad's padding), checked first.
#include "core/plan_steps.hpp"

#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/context_parallel.hpp"
#include "core/error.hpp"

namespace mb::planning {
namespace {

std::uint64_t sequence_length(const NodeInfo& n, const Resolution& resolution) {
  return n.shape.at(static_cast<std::size_t>(*resolution.dataset_rule(n.path).sequence_axis));
}

// --cp-pad writes PATH_padded beside every offsets dataset.
void check_padding(const NodeInfo& root, const Leaves& leaves) {
  if (leaves.packed.empty())
    throw usage_error("--cp-pad pads packed documents, but no dataset's spec is {\"packed\": ...}");
  check_twins_free(root, leaves, padded_offsets_name, "--cp-pad");
}

// Context parallelism needs something to cut, and lengths that 2C divides:
// they are refused, never rounded down (packed documents are padded with
// --cp-pad).
void check_context_parallel(const NodeInfo& root, const Leaves& leaves, const Resolution& resolution,
                            const Sequences& sequences, const SplitOptions& options) {
  const std::uint64_t degree = options.cp_degree;
  if (leaves.sequence_axis.empty() && leaves.packed.empty())
    throw Error(fmt::format("--cp-degree {} has nothing to cut: no dataset's spec marks a sequence axis "
                            "({{\"split_axis\": 0, \"sequence_axis\": 1}}) and no dataset is packed",
                            degree));
  if (options.cp_pad) check_padding(root, leaves);
  for (const NodeInfo* o : leaves.offsets)
    if (!options.cp_pad) require_documents_divisible(sequences.offsets.at(o->path), degree, o->path);
  for (const NodeInfo* n : leaves.sequence_axis)
    require_zigzag_divisible(sequence_length(*n, resolution), degree,
                             fmt::format("{} has {} positions on its sequence axis {}", n->path,
                                         sequence_length(*n, resolution),
                                         *resolution.dataset_rule(n->path).sequence_axis));
}

// How evenly the CP ranks share the attention work: of every offsets
// dataset's documents, and of one sequence of each marked length.
std::vector<CpLoad> cp_loads(const Leaves& leaves, const Resolution& resolution, const Sequences& sequences,
                             std::uint64_t degree) {
  std::vector<CpLoad> out;
  for (const NodeInfo* o : leaves.offsets) {
    const Offsets& offsets = sequences.offsets.at(o->path);
    std::vector<std::uint64_t> lengths;  // padded (--cp-pad): what the ranks' attention runs over
    for (std::size_t s = 0; s + 1 < offsets.size(); ++s)
      lengths.push_back(padded_length(offsets[s + 1] - offsets[s], degree));
    out.push_back(cp_load(o->path, lengths, degree));
  }
  std::map<std::uint64_t, std::string> names;  // the datasets of each sequence length
  for (const NodeInfo* n : leaves.sequence_axis) {
    std::string& of = names[sequence_length(*n, resolution)];
    of += (of.empty() ? "" : ", ") + n->path;
  }
  for (const auto& [length, of] : names)
    out.push_back(cp_load(fmt::format("one sequence of {} positions ({})", length, of), {length}, degree));
  return out;
}

// A padded file can hold more rows than the whole input (a short batch cut
// for many ranks). A fixed max dim shorter than that would have to grow, and
// merge could not give the input's back: refused, not changed.
void require_max_dim_holds(const NodeInfo& p, const LeafRule& rule, const FileRows& file) {
  const auto axis = static_cast<std::size_t>(rule.axis);
  const auto& max = p.storage.max_shape;
  if (p.storage.layout != "chunked" || axis >= max.size() || !max[axis] || file.length <= *max[axis]) return;
  throw Error(fmt::format("{}: --cp-pad gives a file {} rows on axis {}, more than its fixed max dims allow ({}); "
                          "merge could not restore them: give it unlimited max dims (maxshape=None)",
                          p.path, file.length, rule.axis, *max[axis]),
              ErrorKind::Data);
}

}  // namespace

// Context parallelism: every file of the plan so far becomes one file per
// CP rank. A dataset with a sequence axis keeps its rows and takes the
// rank's zigzag positions along that axis; packed data takes, of every
// document, the rank's zigzag tokens; everything else is the same for every
// CP rank.
void cut_context_parallel(const NodeInfo& root, const Leaves& leaves, const Resolution& resolution,
                          const Sequences& sequences, const SplitOptions& options, SplitPlan& plan) {
  const std::uint64_t degree = options.cp_degree;
  check_context_parallel(root, leaves, resolution, sequences, options);
  const FileGrid grid{plan.ranks, degree, plan.count};
  for (auto& entry : plan.pieces) {
    std::vector<RowMap> maps(grid.files());
    for (std::uint64_t f = 0; f < grid.files(); ++f) maps[f] = entry.second[grid.base_of(f)];
    entry.second = std::move(maps);
  }
  for (const NodeInfo* p : leaves.packed) {
    const Offsets& offsets = sequences.offsets.at(resolution.dataset_rule(p->path).offsets);
    std::vector<RowMap>& maps = plan.pieces.at(p->path);
    for (std::uint64_t f = 0; f < grid.files(); ++f) {
      std::vector<Range> documents;
      for (const Range& cell : cells_of(plan, grid.base_of(f))) {
        const auto of_cell = documents_of(offsets, cell);
        documents.insert(documents.end(), of_cell.begin(), of_cell.end());
      }
      if (!options.cp_pad) {
        maps[f] = zigzag(documents, degree, grid.cp_rank_of(f));
        continue;
      }
      PaddedCut cut = padded_zigzag(documents, degree, grid.cp_rank_of(f));
      require_max_dim_holds(*p, resolution.dataset_rule(p->path), cut.file);
      maps[f] = std::move(cut.batch);
      plan.padded[p->path].push_back(std::move(cut.file));
    }
  }
  for (const NodeInfo* n : leaves.sequence_axis) {
    std::vector<RowMap>& maps = plan.positions[n->path];
    for (std::uint64_t f = 0; f < grid.files(); ++f)
      maps.push_back(zigzag({{0, sequence_length(*n, resolution)}}, degree, grid.cp_rank_of(f)));
  }
  plan.cp_loads = cp_loads(leaves, resolution, sequences, degree);
  plan.cp = degree;
  plan.cp_pad = options.cp_pad;
}

}  // namespace mb::planning
