// How many rows every input holds along every cut axis, before any data is
// written: the merge plan needs them to place each input's rows (and to
// size the output) while only that input is open.
#include <fmt/format.h>

#include <set>

#include "core/error.hpp"
#include "io/run/guard.hpp"
#include "io/source/input.hpp"
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
  for (std::size_t f = 0; f < record.rows.size(); ++f) out.push_back(record.held(f));
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
  h5::Id file = source::open(ctx.verified_source());
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

namespace {

// Packed sequences cut across data-parallel ranks in the per-microbatch
// layout: each file before the CP cut holds one cell of every rank, and
// the manifest says where in the batch each cell's sequences go. Its rows of
// the first offsets dataset give the batch's sequences each file holds.
std::vector<RowMap> placed_sequences(const Context& ctx) {
  const MergeJob& job = ctx.job;
  std::string offsets;
  for (const auto& entry : ctx.resolution.datasets)
    if (entry.second.mode == LeafRule::Mode::Offsets && offsets.empty()) offsets = entry.first;
  if (job.dp.degree == 1 || job.layout != FileLayout::PerMicrobatch || offsets.empty()) return {};
  const specs::SplitDatasetRecord* record = nullptr;
  if (job.manifest && job.manifest->datasets.count(offsets)) record = &job.manifest->datasets.at(offsets);
  if (!record || record->rows.size() != job.inputs.size())
    throw usage_error(fmt::format("packed sequences split with --dp-degree {} in the per-microbatch layout are merged "
                                  "from their split's manifest (merge the split's directory or prefix): each file "
                                  "holds one run of every rank's sequences, which the manifest places in the batch",
                                  job.dp.degree));
  const FileGrid grid = job.manifest->grid();
  std::vector<RowMap> out;
  for (std::uint64_t b = 0; b < grid.ranks * grid.microbatches; ++b)
    out.push_back(sequences_of_offsets_rows(record->rows.at(grid.file_of(b, 0)), "the manifest's rows of " + offsets));
  return out;
}

// A default-layout DP split's files say where each rank's sequences begin
// and end in them (rank_bounds_name): input `at.input`'s must be those of
// its manifest's cells, since a loader reads the cells by them and merge
// puts the sequences back by the manifest.
void check_bounds(const Context& at, hid_t file, const std::string& path, const Offsets& offsets) {
  const std::string name = rank_bounds_name(path);
  const auto rule = at.resolution.datasets.find(name);
  if (rule == at.resolution.datasets.end() || rule->second.mode != LeafRule::Mode::RankBounds) return;
  const auto& manifest = at.job.manifest;
  if (!manifest || !manifest->sequences || manifest->sequences->ranks < 2) return;  // placed_sequences refused it
  const SequencePlan& cells = *manifest->sequences;
  if (cells.runs.size() != cells.ranks * manifest->microbatches)
    throw Error(fmt::format("the manifest's {} sequence runs are not {} ranks' cells of {} microbatches",
                            cells.runs.size(), cells.ranks, manifest->microbatches));
  require_path(at, file, name);
  h5::Id dataset = h5::open_object(file, name, at.where(name));
  const Offsets stored = check_offsets(tree::read_offsets(dataset.get(), at.where(name)), at.where(name).describe());
  const std::uint64_t microbatch = manifest->grid().microbatch_of(at.input);
  check_rank_bounds(at.where(name).describe(), stored, rank_bounds(cells.runs, cells.ranks, microbatch),
                    offsets.size() - 1);
}

}  // namespace

PackedInputs packed_inputs(const Context& ctx) {
  PackedInputs in;
  in.degree = ctx.job.cp_degree;
  in.sequences = placed_sequences(ctx);
  in.pad = ctx.job.cp_pad;
  std::set<std::string> paths;  // the offsets to read: those of packed data (CP), or all (placed, padded)
  for (const auto& entry : ctx.resolution.datasets) {
    if (entry.second.mode == LeafRule::Mode::Packed && in.degree > 1) paths.insert(entry.second.offsets);
    if (entry.second.mode == LeafRule::Mode::Offsets && (!in.sequences.empty() || in.pad)) paths.insert(entry.first);
  }
  if (paths.empty()) return in;
  const auto read = [&](const Context& at, hid_t file, const std::string& path) {
    require_path(at, file, path);
    h5::Id dataset = h5::open_object(file, path, at.where(path));
    return check_offsets(tree::read_offsets(dataset.get(), at.where(path)), at.where(path).describe());
  };
  for (std::size_t i = 0; i < ctx.job.inputs.size(); ++i) {
    run::throw_if_interrupted();
    Context at = ctx;
    at.input = i;
    h5::Id file = i == 0 ? h5::Id() : source::open(at.verified_source());
    for (const auto& path : paths) {
      in.offsets[path].push_back(read(at, i == 0 ? ctx.model_file : file.get(), path));
      if (!in.sequences.empty()) check_bounds(at, i == 0 ? ctx.model_file : file.get(), path, in.offsets[path].back());
      if (in.pad) in.padded[path].push_back(read(at, i == 0 ? ctx.model_file : file.get(), padded_offsets_name(path)));
    }
  }
  return in;
}

}  // namespace mb::io::merge
