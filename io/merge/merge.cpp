#include "io/merge/merge.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <filesystem>
#include <numeric>
#include <cstdlib>

#include "core/merge_plan.hpp"
#include "core/resolve.hpp"
#include "io/tree/derived.hpp"
#include "io/source/input.hpp"
#include "io/h5/scales.hpp"
#include "io/merge/copies.hpp"
#include "io/merge/state.hpp"
#include "io/merge/stack.hpp"
#include "io/merge/survey.hpp"
#include "io/merge/team.hpp"
#include "io/merge/verified.hpp"
#include "io/merge/walk.hpp"
#include "io/publish/outputs.hpp"
#include "io/store/place.hpp"
#include "io/tree/prepare.hpp"
#include "io/tree/reader.hpp"

namespace mb::io::merge {
namespace {

void check_options(const MergeJob& job, const Resolution& resolution) {
  // A split's pieces hold no dropped dataset (split prunes them); files that
  // still hold one would be merged without it, which is not their batch.
  for (const auto& [path, rule] : resolution.datasets)
    if (rule.mode == LeafRule::Mode::Drop)
      throw Error(fmt::format("{}: {}: \"drop\" applies to split only: merge writes every dataset of its inputs",
                              job.inputs.front().source.shown(), path));
  if (job.cp_pad && job.cp_degree == 1)
    throw usage_error("--cp-pad says documents were padded for context parallelism: it needs --cp-degree C > 1");
  if (job.cp_pad && job.virtual_datasets)
    throw usage_error("--virtual does not combine with --cp-pad: a virtual dataset cannot leave out the pads");
  if (!job.dp.align) return;
  for (const auto& [path, rule] : resolution.datasets)
    if (rule.mode == LeafRule::Mode::Offsets)
      throw usage_error("--align does not apply to packed sequences (" + path + " is \"offsets\"): every "
                        "data-parallel rank holds a contiguous run of whole sequences");
}

// libhdf5 1.10.8 keeps every source file of a virtual dataset open while
// the dataset is open, and reads a source it cannot open as fill values,
// without an error: a reader under this process's descriptor limit would
// get wrong data from the output.
void warn_about_sources(const MergeJob& job) {
  rlimit limit{};
  if (!job.virtual_datasets || getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  if (job.inputs.size() + 16 < limit.rlim_cur) return;
  spdlog::warn("{}: its virtual datasets read {} source files, all open at once while a dataset is read; under "
               "this shell's descriptor limit ({}), libhdf5 reads the sources it cannot open as fill values, "
               "without an error: read it with a higher `ulimit -n`, or merge without --virtual",
               job.output, job.inputs.size(), limit.rlim_cur);
}

// Every file the run reads (the inputs, then what it reads besides), watched
// from before the first byte (digests included) so that publishing can check
// that none changed. (That none is the output is checked where the output's
// place is known, on every kind of place: io/merge/inputs.hpp.)
void watch_inputs(const MergeJob& job) {
  for (const auto& input : job.inputs) run::watch_input(input.source);
  for (const auto& source : job.read_besides) run::watch_input(source);
}

// The output, checked (and, in a directory, locked) before any work by the
// process that writes it (rank 0 of a team); nothing for other ranks.
std::unique_ptr<store::FilePublication> claim_output(const MergeJob& job) {
  if (!leads(job)) return nullptr;
  return job.place->file_publication(job.output_name, job.force);
}

std::uint64_t dataset_count(const NodeInfo& tree, const Resolution& resolution) {
  std::uint64_t count = 0;
  for_each_node(tree, [&](const NodeInfo& n) {
    count += !n.is_group() && !n.is_further_name() &&
             resolution.dataset_rule(n.path).mode != LeafRule::Mode::PaddedOffsets &&
             resolution.dataset_rule(n.path).mode != LeafRule::Mode::RankBounds;
  });
  return count;
}

// Every input in turn, each one piece of the meter (`sizes[i]` bytes of
// input i): opened once, merged, and closed before the next is opened.
struct Pass {
  const NodeInfo& tree;
  run::ByteMeter& meter;
  const std::vector<std::uint64_t>& sizes;
};
void merge_inputs(Context ctx, MergeState& state, const Pass& pass, hid_t out) {
  for (std::size_t i = 0; i < ctx.job.inputs.size(); ++i) {
    ctx.input = i;
    pass.meter.begin(pass.sizes[i]);
    if (!merge_copy(ctx, state, out)) {  // both wait for input i's digest, hashed while input i - 1 was merged
      const h5::Id file = i == 0 ? h5::Id() : source::open(ctx.verified_source());
      merge_input(ctx, state, pass.tree, i == 0 ? ctx.model_file : file.get(), out);
    }
    pass.meter.end();
  }
}

// What is written once every input is merged: the reductions too large to
// carry, dimension scales, and the merged batch's derived values (from the
// merged offsets as written).
void finish_output(const Context& ctx, const MergeState& state, const NodeInfo& tree, hid_t out) {
  spdlog::debug("merge: {} results assembled in memory written as file bytes", state.concat.placed_written);
  reduce_deferred(ctx, state.reduce, out);
  h5::attach_scales(out, ctx.job.output, tree);
  tree::write_derived_values(out, ctx.job.output, tree::derived_targets(tree, ctx.resolution));
}

}  // namespace

MergeResult execute(const MergeJob& unmetered, const tree::SpecRequest& spec) {
  if (unmetered.inputs.empty()) throw usage_error("merge needs at least one input");
  MergeJob job = unmetered;  // its policy gets the progress meter once the plan gives the total
  const bool lead = leads(job);
  watch_inputs(job);
  const std::unique_ptr<store::FilePublication> output = claim_output(job);  // held to the end: the lock
  VerifiedInputs verified(job);  // sizes now; digests now, or each as its input is reached
  if (job.team) job.team->agree();  // every share verified: no rank reads a changed file
  verified.ready(0);
  const Source& model_source = job.inputs.front().source;
  const std::string& first = model_source.shown();
  // The first input is the model: its tree is the output's, and every other
  // input is checked against it, so it stays open throughout.
  h5::Id model = source::open(model_source);
  const NodeInfo tree = tree::read_tree(model.get(), first);
  const tree::SpecChoice choice = *tree::choose_spec(spec, tree, first);  // the default spec at the least
  const Resolution resolution = tree::about_file(first, [&] {
    const OffsetsTwins twins{job.cp_pad, job.dp.degree > 1 && job.layout == FileLayout::PerMicrobatch};
    return twins.padded || twins.rank_bounds ? resolve_twins(tree, choice.spec, choice.name, twins)
                                             : resolve(tree, choice.spec, choice.name);
  });
  check_options(job, resolution);
  MergePlan plan;
  MergeState state;
  state.carried.budget = job.policy.buffer_bytes;  // what outlives one input, beside the transfer buffer
  Context base{job, resolution, plan, state.weights, model.get()};
  base.verified = &verified;
  const Context& ctx = base;
  plan = plan_merge(tree, resolution, input_lengths(ctx, tree), job.dp, job.layout, packed_inputs(ctx));
  // Each input is one piece of the meter: its data bytes, counted as its copies go and whole once it is merged.
  const std::vector<std::uint64_t> sizes = input_bytes(tree, plan, job.inputs.size());
  run::ByteMeter meter(std::accumulate(sizes.begin(), sizes.end(), std::uint64_t{0}), job.progress);
  if (job.progress) job.policy.meter = &meter;
  // A team's ranks but 0 write their shares into scratch files (removed when done); rank 0 writes the output
  // (and its share of the shared datasets into a scratch file too, see team.hpp).
  state.team.place = scratch_place(job, lead ? output->path() : "");
  std::optional<publish::ScratchFile> scratch;
  if (!lead) scratch.emplace(state.team.place.path(job.team->rank));
  const std::string temp = lead ? output->path() : scratch->path();
  const h5::Id model_root = h5::open_object(model.get(), "/", {first, "/"});
  h5::Id out = h5::create_file(temp, job.output, {needs_newer_header(ctx, tree, model_root.get())});
  state.copies.possible = copies_possible(ctx);
  merge_inputs(ctx, state, {tree, meter, sizes}, out.get());
  finish_output(ctx, state, tree, out.get());
  if (!lead) out.close({temp, ""});
  close_own_scratch(state.team);
  if (job.team) {
    store::ready_to_commit();  // what this rank read is what stood when it began
    job.team->agree();         // every rank's share is written
  }
  if (!lead) {
    job.team->agree();  // rank 0 has moved it into the output
    job.team->agree();  // and published it: a rank 0 stopped before that fails every rank
    return {};
  }
  gather_shared_chunks(ctx, state.team, out.get());  // last, in one order: the same bytes whatever the team
  out.close({job.output, ""});
  if (job.team) job.team->agree();  // the output is complete
  // The merge is done: the progress line stays at its total and counts the upload, if any.
  store::ready_to_commit();
  const std::uint64_t size = output->publish([&](std::uint64_t sent) { meter.uploaded(sent); });
  if (job.team) job.team->agree();  // published
  output->keep();
  warn_about_sources(job);
  return {dataset_count(tree, resolution), size, meter.total(), choice.preset};
}

}  // namespace mb::io::merge
