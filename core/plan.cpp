#include "core/plan.hpp"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/packed.hpp"
#include "core/plan_steps.hpp"

namespace mb {

using planning::CutLength;
using planning::Leaves;
using planning::Sequences;
using planning::cells_of;

namespace planning {

// The cells (data-parallel rank, microbatch) base file `base` holds, in
// order: in the per-microbatch layout, cell (d, base) of every rank d; in
// the per-rank layout (and with one rank), cell `base` alone.
std::vector<Range> cells_of(const SplitPlan& plan, std::uint64_t base) {
  const SequencePlan& seq = *plan.sequences;
  if (plan.layout == FileLayout::PerRank || seq.ranks == 1) return {seq.runs.at(base)};
  std::vector<Range> out;
  for (std::uint64_t d = 0; d < seq.ranks; ++d) out.push_back(seq.runs.at(d * plan.count + base));
  return out;
}

// A split that writes a twin beside every offsets dataset (`flag` says
// which: PATH_padded, PATH_dp_bounds) refuses a batch that holds one
// already rather than shadow it.
void check_twins_free(const NodeInfo& root, const Leaves& leaves, std::string (*named)(const std::string&),
                      const char* flag) {
  for (const NodeInfo* o : leaves.offsets) {
    const std::string name = named(o->path);
    for_each_node(root, [&](const NodeInfo& n) {
      if (n.path == name)
        throw Error(fmt::format("{} writes {} beside {}, but the batch holds a {} already", flag, name, o->path,
                                name));
    });
  }
}

}  // namespace planning

namespace {

std::uint64_t axis_length(const NodeInfo& n, const LeafRule& rule) {
  return n.shape.at(static_cast<std::size_t>(rule.axis));
}

std::string axis_dimension(const NodeInfo& n, const LeafRule& rule) {
  const auto axis = static_cast<std::size_t>(rule.axis);
  return axis < n.dimensions.size() ? n.dimensions[axis] : std::string();
}

// Sorts the datasets by rule; refuses reducers (they only apply to merge).
Leaves collect_leaves(const NodeInfo& root, const Resolution& resolution) {
  Leaves out;
  for_each_node(root, [&](const NodeInfo& n) {
    for (const auto& a : n.attributes)
      if (resolution.attribute_rule(n.path, a.name).mode == LeafRule::Mode::Reduce)
        throw Error(fmt::format("spec gives a reducer for attribute {}@{}: a reducer only applies to merge; for "
                                "split, give \"replicate\" (or leave the attribute out of the spec)",
                                n.path, a.name),
                    ErrorKind::Data, {"", n.path});
    if (n.is_group()) return;
    const LeafRule& rule = resolution.dataset_rule(n.path);
    switch (rule.mode) {
      case LeafRule::Mode::Reduce:
        throw Error(fmt::format("spec gives a reducer for {}: a reducer only applies to merge; for split, give an "
                                "axis, \"replicate\" or \"drop\"",
                                n.path),
                    ErrorKind::Data, {"", n.path});
      case LeafRule::Mode::Split:
        out.split.push_back({n.path, axis_length(n, rule), "rows on its split axis", axis_dimension(n, rule)});
        if (rule.sequence_axis) out.sequence_axis.push_back(&n);
        break;
      case LeafRule::Mode::Offsets: out.offsets.push_back(&n); break;
      case LeafRule::Mode::Packed: out.packed.push_back(&n); break;
      case LeafRule::Mode::PerSequence: out.per_sequence.push_back(&n); break;
      case LeafRule::Mode::Replicate:
      case LeafRule::Mode::Derive:  // one value per file, written by the split itself
      case LeafRule::Mode::Drop: break;  // pruned from the tree before the plan (io/tree/prepare)
      case LeafRule::Mode::PaddedOffsets:
      case LeafRule::Mode::RankBounds: break;  // merge only
    }
  });
  return out;
}

// With a data-parallel degree D, every split axis holds D equal slices, and
// the cut applies to the slice length. Under -n, packed sequences need not
// divide: every rank gets N microbatches of the D·N runs the balance cuts,
// so a rank has at least floor(S/D) sequences to give them.
void to_slice_lengths(std::vector<CutLength>& cuts, std::uint64_t degree, bool exact_sequences) {
  if (degree == 1) return;
  for (auto& c : cuts) {
    const bool sequences = c.unit == std::string_view("sequences");
    if (c.length % degree != 0 && (!sequences || exact_sequences))
      throw Error(fmt::format("{} has {} {}, not divisible by --dp-degree {}", c.path, c.length,
                              sequences ? "sequences" : "rows on its split axis", degree),
                  ErrorKind::Data, {"", c.path});
    c.length /= degree;
    c.unit = sequences ? "sequences per data-parallel rank" : "rows on its split axis per data-parallel slice";
  }
}

std::string describe(const CutLength& c) {
  if (c.dimension.empty()) return fmt::format("{} has {} {}", c.path, c.length, c.unit);
  const bool per_slice = std::string_view(c.unit).ends_with("per data-parallel slice");
  return fmt::format("dimension {} has length {}{}", c.dimension, c.length,
                     per_slice ? " per data-parallel slice" : "");
}

const char* noun(bool sequences, std::uint64_t n) {
  return sequences ? (n == 1 ? "sequence" : "sequences") : n == 1 ? "row" : "rows";
}

// --micro-batch-size M with --drop-last: the split is that of the first
// floor(L / (M·D)) · M·D rows (sequences, when packed), whatever L mod D:
// every data-parallel slice then holds whole microbatches. Returns the count
// and leaves every cut at its kept slice length.
std::uint64_t count_dropping(std::vector<CutLength>& cuts, const SplitOptions& options, SplitPlan& plan) {
  const std::uint64_t size = *options.micro_batch_size, degree = options.dp.degree;
  const CutLength& first = cuts.front();
  const bool sequences = first.unit == std::string_view("sequences");
  const std::uint64_t whole = first.length / size / degree;  // floor(L / (M·D)), with no product to overflow
  const std::string times = degree > 1 ? fmt::format(" x --dp-degree {}", degree) : "";
  if (whole == 0)
    throw usage_error(fmt::format("--drop-last leaves nothing: {}, fewer than --micro-batch-size {}{}",
                                  describe(first), size, times));
  const std::uint64_t kept = whole * size * degree;  // at most L
  plan.dropped = first.length - kept;
  if (plan.dropped != 0)
    plan.warnings.push_back(fmt::format("--drop-last left out the last {} {} of every split dataset ({}, {} more "
                                        "than a multiple of --micro-batch-size {}{})",
                                        plan.dropped, noun(sequences, plan.dropped), describe(first), plan.dropped,
                                        size, times));
  for (auto& c : cuts) {
    c.length = kept / degree;
    if (degree > 1)
      c.unit = sequences ? "sequences per data-parallel rank" : "rows on its split axis per data-parallel slice";
  }
  return whole;
}

// --micro-batch-size: the microbatch count (every cut of the same length,
// cut per data-parallel slice); with --drop-last, count_dropping's.
std::uint64_t count_by_size(std::vector<CutLength>& cuts, const SplitOptions& options, SplitPlan& plan) {
  const std::uint64_t size = *options.micro_batch_size;
  if (cuts.empty()) throw Error("--micro-batch-size needs at least one split dataset; the spec splits none");
  for (const auto& c : cuts)
    if (c.length != cuts.front().length)
      throw Error(fmt::format("--micro-batch-size needs every split axis to have the same length: {}, {}",
                              describe(cuts.front()), describe(c)));
  if (cuts.front().length == 0) throw Error(fmt::format("nothing to split: {}", describe(cuts.front())));
  if (options.drop_last) return count_dropping(cuts, options, plan);
  to_slice_lengths(cuts, options.dp.degree, true);
  const CutLength& first = cuts.front();
  const std::uint64_t rest = first.length % size;
  if (rest != 0)
    plan.warnings.push_back(fmt::format("the last microbatch is shorter than the others: {}, {} more than a multiple "
                                        "of --micro-batch-size {} (--drop-last leaves them out)",
                                        describe(first), rest, size));
  return first.length / size + (first.length % size != 0);  // length + size - 1 could wrap
}

std::uint64_t count_for_n(const std::vector<CutLength>& cuts, std::uint64_t n, OnShort on_short,
                              std::vector<std::string>& warnings) {
  auto shortest = std::min_element(cuts.begin(), cuts.end(),
                                   [](const CutLength& a, const CutLength& b) { return a.length < b.length; });
  if (shortest == cuts.end() || shortest->length >= n) return n;
  const std::string why = describe(*shortest);
  switch (on_short) {
    case OnShort::Error:
      throw Error(fmt::format("cannot cut into {} microbatches: {} (--on-short downsize or empty allows it)", n, why),
                  ErrorKind::Data, {"", shortest->path});
    case OnShort::Downsize:
      if (shortest->length == 0) throw Error(fmt::format("cannot downsize: {}", why));
      warnings.push_back(fmt::format("downsizing from {} to {} microbatches: {}", n, shortest->length, why));
      return shortest->length;
    case OnShort::Empty: return n;
  }
  return n;
}

// How many microbatches, by --micro-batch-size or by -n, checked against the
// limit on files (which per-rank files and CP ranks multiply). Sets
// plan.dropped and adds warnings on the way; `cuts` as count_by_size leaves
// them.
std::uint64_t microbatch_count(std::vector<CutLength>& cuts, const SplitOptions& options, SplitPlan& plan) {
  if (options.drop_last && !options.micro_batch_size)
    throw usage_error("--drop-last needs --micro-batch-size (-n cuts every row into N microbatches)");
  std::uint64_t count = 0;
  if (options.micro_batch_size) {
    const std::uint64_t size = *options.micro_batch_size;
    if (size == 0) throw usage_error("--micro-batch-size must be at least 1");
    count = count_by_size(cuts, options, plan);
    if (count > kMaxMicrobatches)
      throw usage_error(fmt::format("--micro-batch-size {} gives {} microbatches, more than the limit of {}", size,
                                    count, kMaxMicrobatches));
  } else {
    if (*options.count == 0) throw usage_error("-n/--chunks must be at least 1");
    if (*options.count > kMaxMicrobatches)
      throw usage_error(
          fmt::format("-n {} is more than the limit of {} microbatches", *options.count, kMaxMicrobatches));
    to_slice_lengths(cuts, options.dp.degree, false);
    count = count_for_n(cuts, *options.count, options.on_short, plan.warnings);
  }
  if (plan.ranks * options.cp_degree * count > kMaxMicrobatches)
    throw usage_error(fmt::format("{} microbatches for {} ranks and {} CP ranks make more files than the limit of {}",
                                  count, plan.ranks, options.cp_degree, kMaxMicrobatches));
  return count;
}

// Checks the offsets datasets and the packed / per-sequence lengths against
// them (merge checks each input by the same rules).
Sequences check_sequences(const Leaves& leaves, const Resolution& resolution, const OffsetsValues& values) {
  Sequences out;
  SequencePlan& seq = out.plan;
  std::vector<Offsets> sets;
  for (const NodeInfo* o : leaves.offsets) {
    auto it = values.find(o->path);
    if (it == values.end()) throw Error(fmt::format("internal: the values of {} were not read", o->path));
    Offsets checked = check_offsets(it->second, o->path);
    if (!sets.empty()) check_same_sequences(seq.offsets.front(), sets.front(), o->path, checked);
    seq.sequences = checked.size() - 1;
    seq.offsets.push_back(o->path);
    sets.push_back(checked);
    out.offsets.emplace(o->path, std::move(checked));
  }
  for (const NodeInfo* p : leaves.packed) {
    const LeafRule& rule = resolution.dataset_rule(p->path);
    check_packed_length({p->path, rule.axis, axis_length(*p, rule), rule.offsets}, out.offsets.at(rule.offsets));
  }
  for (const NodeInfo* p : leaves.per_sequence) {
    const LeafRule& rule = resolution.dataset_rule(p->path);
    check_per_sequence_length({p->path, rule.axis, axis_length(*p, rule), rule.offsets},
                              out.offsets.at(rule.offsets));
  }
  out.tokens = sequence_tokens(sets);
  for (auto t : out.tokens) seq.tokens += t;  // exact: sequence_tokens checked the total
  return out;
}

// Rows of every packed-family dataset from the cells each file holds.
void cut_sequences(const Leaves& leaves, const Resolution& resolution, const Sequences& sequences, SplitPlan& plan) {
  const std::uint64_t bases = plan.ranks * plan.count;
  for (std::uint64_t b = 0; b < bases; ++b) {
    const std::vector<Range> cells = cells_of(plan, b);
    for (const NodeInfo* o : leaves.offsets) plan.pieces[o->path].push_back(offsets_rows(cells));
    for (const NodeInfo* p : leaves.packed) {
      const Offsets& offsets = sequences.offsets.at(resolution.dataset_rule(p->path).offsets);
      RowMap tokens;
      for (const Range& c : cells)
        append_rows(tokens, offsets[c.begin], offsets[c.end] - offsets[c.begin]);
      plan.pieces[p->path].push_back(tokens);
    }
    for (const NodeInfo* p : leaves.per_sequence) {
      RowMap rows;
      for (const Range& c : cells)
        if (c.size() > 0) rows.push_back({c.begin, c.size(), 1});
      plan.pieces[p->path].push_back(rows);
    }
  }
}

// Per sequence, its causal attention work, when the sum fits 64 bits (it
// is only needed to balance by it, which refuses a sum that does not).
std::vector<std::uint64_t> work_of(const Sequences& sequences, Balance balance) {
  std::vector<Offsets> sets;
  for (const auto& entry : sequences.offsets) sets.push_back(entry.second);
  try {
    return sequence_work(sets);
  } catch (const Error&) {
    if (balance == Balance::Attention) throw;
    return {};
  }
}

// The cells of whole sequences, D·N of them (rank-major): --micro-batch-size
// sequences each (of every rank's `per_rank` sequences, those --drop-last
// kept), equal counts (--balance sequences), or the contiguous cut whose
// largest cell holds the fewest tokens (or causal attention work); then the
// rows they give every packed-family dataset.
void plan_sequence_runs(const Leaves& leaves, const Resolution& resolution, const Sequences& sequences,
                        std::uint64_t per_rank, const SplitOptions& options, SplitPlan& plan) {
  SequencePlan& seq = *plan.sequences;
  const std::uint64_t cells = plan.count * seq.ranks;
  const std::vector<std::uint64_t> work = work_of(sequences, options.balance);
  if (options.micro_batch_size) {
    for (std::uint64_t d = 0; d < seq.ranks; ++d)
      for (const Range& r : split_by_size(per_rank, *options.micro_batch_size))
        seq.runs.push_back({d * per_rank + r.begin, d * per_rank + r.end});
  } else if (options.balance == Balance::Sequences) {
    seq.runs = array_split(seq.sequences, cells);
  } else {
    seq.runs = balance_runs(options.balance == Balance::Attention ? work : sequences.tokens, cells);
  }
  seq.run_tokens = run_weights(sequences.tokens, seq.runs);
  if (!work.empty() || seq.sequences == 0) {
    for (auto w : work) seq.work += w;  // exact: sequence_work checked the total
    seq.run_work = run_weights(work, seq.runs);
  }
  cut_sequences(leaves, resolution, sequences, plan);
}

}  // namespace

const char* reducer_name(Reducer r) {
  switch (r) {
    case Reducer::Sum: return "sum";
    case Reducer::Mean: return "mean";
    case Reducer::Min: return "min";
    case Reducer::Max: return "max";
    case Reducer::Stack: return "stack";
  }
  return "?";
}

SplitPlan plan_split(const NodeInfo& root, const Resolution& resolution, const SplitOptions& options,
                     const OffsetsValues& offsets) {
  if (options.count.has_value() == options.micro_batch_size.has_value())
    throw usage_error("give exactly one of -n/--chunks and --micro-batch-size");
  if (options.dp.degree == 0) throw usage_error("--dp-degree must be at least 1");
  if (options.cp_degree == 0) throw usage_error("--cp-degree must be at least 1");
  SplitPlan plan;
  plan.layout = options.layout;
  if (options.layout == FileLayout::PerRank) plan.ranks = options.dp.degree;
  const Leaves leaves = collect_leaves(root, resolution);
  std::vector<CutLength> cuts = leaves.split;
  const std::size_t split_cuts = cuts.size();  // the sequence count may follow
  Sequences sequences;
  if (!leaves.offsets.empty()) {
    if (options.dp.align)
      throw usage_error("--align does not apply to packed sequences: every data-parallel rank holds a contiguous run "
                        "of whole sequences (leave --align out)");
    sequences = check_sequences(leaves, resolution, offsets);
    plan.sequences = sequences.plan;
    plan.sequences->ranks = options.dp.degree;
    cuts.push_back({leaves.offsets.front()->path, plan.sequences->sequences, "sequences", {}});
    if (options.dp.degree > 1 && options.layout == FileLayout::PerMicrobatch)
      planning::check_twins_free(root, leaves, rank_bounds_name, "--dp-degree in the default layout");
  }

  plan.count = microbatch_count(cuts, options, plan);

  if (leaves.split.empty() && leaves.offsets.empty() && !options.allow_copies)
    throw Error(fmt::format("the spec splits no dataset: each of the {} files would be a whole copy of the input "
                            "(give a spec that splits one, or --allow-copies if copies are meant)",
                            plan.count));

  // Regular split leaves: array_split (or torch.split) of each data-parallel slice.
  for (std::size_t i = 0; i < split_cuts; ++i) {
    const CutLength& c = cuts[i];
    const auto pieces = options.micro_batch_size ? split_by_size(c.length, *options.micro_batch_size)
                                                 : array_split(c.length, plan.count);
    const std::uint64_t length = c.length * options.dp.degree;
    plan.pieces[c.path] = options.layout == FileLayout::PerRank ? per_rank_maps(length, options.dp, pieces)
                                                                 : data_parallel_maps(length, options.dp, pieces);
  }
  if (plan.sequences) plan_sequence_runs(leaves, resolution, sequences, cuts.back().length, options, plan);
  if (options.cp_pad && options.cp_degree == 1)
    throw usage_error("--cp-pad pads documents for context parallelism: it needs --cp-degree C > 1");
  if (options.cp_degree > 1) planning::cut_context_parallel(root, leaves, resolution, sequences, options, plan);
  return plan;
}

}  // namespace mb
