// How many rows every input holds along every cut axis, before any data is
// written: the merge plan needs them to place each input's rows (and to
// size the output) while only that input is open.
#include <fmt/format.h>

#include <set>

#include "core/error.hpp"
#include "io/run/guard.hpp"
#include "io/tree/input.hpp"
#include "io/h5/object.hpp"
#include "io/merge/checks.hpp"
#include "io/merge/survey.hpp"
#include "io/tree/offsets.hpp"
#include "io/tree/reader.hpp"

namespace mb::io::merge {
namespace {

// The manifest's lengths of `node`, when it records them for this axis and
// every input (check_rows holds each input to them on the walk).
std::optional<std::vector<std::uint64_t>> recorded_lengths(const Context& ctx, const NodeInfo& node) {
  if (!ctx.job.manifest) return std::nullopt;
  const auto it = ctx.job.manifest->datasets.find(node.path);
  if (it == ctx.job.manifest->datasets.end()) return std::nullopt;
  const specs::SplitDatasetRecord& record = it->second;
  if (record.axis != ctx.resolution.dataset_rule(node.path).axis || record.rows.size() != ctx.job.inputs.size())
    return std::nullopt;
  std::vector<std::uint64_t> out;
  for (const auto& map : record.rows) out.push_back(rows_in(map));
  return out;
}

// Refuses an input without the dataset at `path`, naming the first
// member on the way that it lacks, as the walk's member check would.
void require_path(const Context& ctx, hid_t file, const std::string& path) {
  std::string prefix;
  std::size_t from = 1;
  while (from <= path.size()) {
    const std::size_t to = std::min(path.find('/', from), path.size());
    const std::string parent = prefix.empty() ? "/" : prefix;
    prefix += "/" + path.substr(from, to - from);
    if (!h5::link_exists(file, prefix))
      throw Error(fmt::format("{}: member {}/{} is missing (present in {})", ctx.file(), parent == "/" ? "" : parent,
                              path.substr(from, to - from), ctx.job.inputs[0].source.shown()));
    from = to + 1;
  }
}

// Input `ctx.input`'s length along the cut axis of every dataset in `cut`.
void survey_input(const Context& ctx, const std::vector<const NodeInfo*>& cut, InputLengths& lengths) {
  h5::Id file = tree::open_input(ctx.verified_source());
  for (const NodeInfo* node : cut) {
    const auto axis = static_cast<std::size_t>(ctx.resolution.dataset_rule(node->path).axis);
    require_path(ctx, file.get(), node->path);
    h5::Id dataset = h5::open_object(file.get(), node->path, ctx.where(node->path));
    check_kind(ctx, *node, dataset.get());
    const h5::SpaceInfo space = h5::dataset_space(dataset.get(), ctx.where(node->path));
    if (space.null_space || space.dims.size() != node->shape.size())
      shapes_differ(ctx, node->path, node->shape, space.dims);
    lengths[node->path].push_back(space.dims[axis]);
  }
}

}  // namespace

InputLengths input_lengths(const Context& ctx, const NodeInfo& first_tree) {
  InputLengths lengths;
  std::vector<const NodeInfo*> unknown;
  for (const NodeInfo* node : cut_datasets(first_tree, ctx.resolution)) {
    if (auto recorded = recorded_lengths(ctx, *node)) {
      lengths[node->path] = std::move(*recorded);
      continue;
    }
    unknown.push_back(node);
    const auto axis = static_cast<std::size_t>(ctx.resolution.dataset_rule(node->path).axis);
    lengths[node->path].push_back(node->shape.at(axis));
  }
  if (unknown.empty()) return lengths;
  // One pass over the inputs' shapes, each input opened and closed in turn.
  for (std::size_t i = 1; i < ctx.job.inputs.size(); ++i) {
    run::throw_if_interrupted();
    Context at = ctx;
    at.input = i;
    survey_input(at, unknown, lengths);
  }
  return lengths;
}

ContextParallelInputs context_parallel_inputs(const Context& ctx) {
  ContextParallelInputs cp{ctx.job.cp_degree, {}};
  std::set<std::string> paths;  // the offsets of packed data
  for (const auto& entry : ctx.resolution.datasets)
    if (entry.second.mode == LeafRule::Mode::Packed) paths.insert(entry.second.offsets);
  if (cp.degree == 1 || paths.empty()) return cp;
  for (std::size_t i = 0; i < ctx.job.inputs.size(); ++i) {
    run::throw_if_interrupted();
    Context at = ctx;
    at.input = i;
    h5::Id file = i == 0 ? h5::Id() : tree::open_input(at.verified_source());
    for (const auto& path : paths) {
      require_path(at, i == 0 ? ctx.model_file : file.get(), path);
      h5::Id dataset = h5::open_object(i == 0 ? ctx.model_file : file.get(), path, at.where(path));
      const RawOffsets raw = tree::read_offsets(dataset.get(), at.where(path));
      cp.offsets[path].push_back(check_offsets(raw, at.where(path).describe()));
    }
  }
  return cp;
}

}  // namespace mb::io::merge
