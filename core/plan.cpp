#include "core/plan.hpp"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/packed.hpp"

namespace mb {
namespace {

// Something whose length decides how many microbatches there can be: a
// split axis (per data-parallel slice), or the packed sequence count.
struct CutLength {
  std::string path;
  std::uint64_t length;
  const char* unit;  // "rows on its split axis", "sequences"
};

struct Leaves {
  std::vector<CutLength> split;  // Split leaves
  std::vector<const NodeInfo*> offsets, packed, per_sequence;
  std::vector<const NodeInfo*> sequence_axis;  // Split leaves with a sequence axis
};

std::uint64_t axis_length(const NodeInfo& n, const LeafRule& rule) {
  return n.shape.at(static_cast<std::size_t>(rule.axis));
}

// Sorts the datasets by rule; refuses reducers (they only apply to merge).
Leaves collect_leaves(const NodeInfo& root, const Resolution& resolution) {
  Leaves out;
  for_each_node(root, [&](const NodeInfo& n) {
    for (const auto& a : n.attributes)
      if (resolution.attribute_rule(n.path, a.name).mode == LeafRule::Mode::Reduce)
        throw Error(fmt::format("spec gives a reducer for attribute {}@{}: a reducer only applies to merge; for "
                                "split, give \"replicate\" (or leave the attribute out of the spec)",
                                n.path, a.name));
    if (n.is_group()) return;
    const LeafRule& rule = resolution.dataset_rule(n.path);
    switch (rule.mode) {
      case LeafRule::Mode::Reduce:
        throw Error(fmt::format("spec gives a reducer for {}: a reducer only applies to merge; for split, give an "
                                "axis, \"replicate\" or \"drop\"",
                                n.path));
      case LeafRule::Mode::Split:
        out.split.push_back({n.path, axis_length(n, rule), "rows on its split axis"});
        if (rule.sequence_axis) out.sequence_axis.push_back(&n);
        break;
      case LeafRule::Mode::Offsets: out.offsets.push_back(&n); break;
      case LeafRule::Mode::Packed: out.packed.push_back(&n); break;
      case LeafRule::Mode::PerSequence: out.per_sequence.push_back(&n); break;
      case LeafRule::Mode::Replicate:
      case LeafRule::Mode::Derive:  // one value per file, written by the split itself
      case LeafRule::Mode::Drop: break;  // pruned from the tree before the plan (io/tree/prepare)
    }
  });
  return out;
}

// With a data-parallel degree D, every split axis holds D equal slices, and
// the cut applies to the slice length.
void to_slice_lengths(std::vector<CutLength>& cuts, std::uint64_t degree) {
  if (degree == 1) return;
  for (auto& c : cuts) {
    if (c.length % degree != 0)
      throw Error(fmt::format("{} has {} rows on its split axis, not divisible by --dp-degree {}", c.path, c.length,
                              degree));
    c.length /= degree;
    c.unit = "rows on its split axis per data-parallel slice";
  }
}

std::string describe(const CutLength& c) { return fmt::format("{} has {} {}", c.path, c.length, c.unit); }

// --micro-batch-size: the microbatch count, and with --drop-last the rows of
// every cut left out (each cut then shortened to whole microbatches).
std::uint64_t count_by_size(std::vector<CutLength>& cuts, const SplitOptions& options, SplitPlan& plan) {
  const std::uint64_t size = *options.micro_batch_size;
  if (cuts.empty()) throw Error("--micro-batch-size needs at least one split dataset; the spec splits none");
  for (const auto& c : cuts)
    if (c.length != cuts.front().length)
      throw Error(fmt::format("--micro-batch-size needs every split axis to have the same length: {}, {}",
                              describe(cuts.front()), describe(c)));
  const CutLength& first = cuts.front();
  if (first.length == 0) throw Error(fmt::format("nothing to split: {}", describe(first)));
  const std::uint64_t rest = first.length % size;
  const bool sequences = first.unit == std::string_view("sequences");
  if (rest != 0 && options.drop_last) {
    if (first.length < size)
      throw Error(fmt::format("--drop-last leaves nothing: {}, fewer than --micro-batch-size {}", describe(first),
                              size));
    plan.dropped = rest * options.dp.degree;
    const char* noun = sequences ? (plan.dropped == 1 ? "sequence" : "sequences") : plan.dropped == 1 ? "row" : "rows";
    plan.warnings.push_back(fmt::format("--drop-last left out the last {} {} of every split dataset ({}, {} more "
                                        "than a multiple of --micro-batch-size {})",
                                        plan.dropped, noun, describe(first), rest, size));
    for (auto& c : cuts) c.length -= rest;
  } else if (rest != 0) {
    plan.warnings.push_back(fmt::format("the last microbatch is shorter than the others: {}, {} more than a multiple "
                                        "of --micro-batch-size {} (--drop-last leaves them out)",
                                        describe(first), rest, size));
  }
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
      throw Error(fmt::format("cannot cut into {} microbatches: {} (--on-short downsize or empty allows it)", n, why));
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
    count = count_for_n(cuts, *options.count, options.on_short, plan.warnings);
  }
  if (plan.ranks * options.cp_degree * count > kMaxMicrobatches)
    throw usage_error(fmt::format("{} microbatches for {} ranks and {} CP ranks make more files than the limit of {}",
                                  count, plan.ranks, options.cp_degree, kMaxMicrobatches));
  return count;
}

std::vector<RowMap> contiguous(const std::vector<Range>& ranges) {
  std::vector<RowMap> maps;
  for (const auto& r : ranges) maps.push_back(r.size() ? RowMap{{r.begin, r.size(), 1}} : RowMap{});
  return maps;
}

// The packed sequences of the input, checked: the offsets by path, and the
// tokens per sequence summed over them.
struct Sequences {
  SequencePlan plan;  // without runs
  std::map<std::string, Offsets> offsets;
  std::vector<std::uint64_t> tokens;
};

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

// Rows of every packed-family dataset from the sequence runs.
void cut_sequences(const Leaves& leaves, const Resolution& resolution, const Sequences& sequences,
                   const SequencePlan& seq, SplitPlan& plan) {
  for (const NodeInfo* o : leaves.offsets) {
    // Sequences [a, b) need offsets rows a..b: b - a + 1 values, rebased to 0 when written.
    std::vector<RowMap> maps;
    for (const auto& run : seq.runs) maps.push_back({{run.begin, run.size() + 1, 1}});
    plan.pieces[o->path] = maps;
  }
  for (const NodeInfo* p : leaves.packed) {
    const Offsets& offsets = sequences.offsets.at(resolution.dataset_rule(p->path).offsets);
    std::vector<Range> rows;
    for (const auto& run : seq.runs) rows.push_back({offsets[run.begin], offsets[run.end]});
    plan.pieces[p->path] = contiguous(rows);
  }
  for (const NodeInfo* p : leaves.per_sequence) plan.pieces[p->path] = contiguous(seq.runs);
}

// The runs of whole sequences, one per microbatch: --micro-batch-size
// sequences each (of the `kept` ones, those --drop-last did not leave out),
// equal counts (--balance sequences), or balanced by tokens; then the rows
// they give every packed-family dataset.
void plan_sequence_runs(const Leaves& leaves, const Resolution& resolution, const Sequences& sequences,
                        std::uint64_t kept, const SplitOptions& options, SplitPlan& plan) {
  SequencePlan& seq = *plan.sequences;
  if (options.micro_batch_size) {
    seq.runs = split_by_size(kept, *options.micro_batch_size);
  } else if (options.balance == Balance::Sequences) {
    seq.runs = array_split(seq.sequences, plan.count);
  } else {
    seq.runs = balance_tokens(sequences.tokens, plan.count);
  }
  seq.run_tokens = run_tokens(sequences.tokens, seq.runs);
  cut_sequences(leaves, resolution, sequences, seq, plan);
}

std::uint64_t sequence_length(const NodeInfo& n, const Resolution& resolution) {
  return n.shape.at(static_cast<std::size_t>(*resolution.dataset_rule(n.path).sequence_axis));
}

// Context parallelism needs something to cut, and lengths that 2C divides:
// they are refused, never rounded down.
void check_context_parallel(const Leaves& leaves, const Resolution& resolution, const Sequences& sequences,
                            std::uint64_t degree) {
  if (leaves.sequence_axis.empty() && leaves.packed.empty())
    throw Error(fmt::format("--cp-degree {} has nothing to cut: no dataset's spec marks a sequence axis "
                            "({{\"split_axis\": 0, \"sequence_axis\": 1}}) and no dataset is packed",
                            degree));
  for (const NodeInfo* o : leaves.offsets) require_documents_divisible(sequences.offsets.at(o->path), degree, o->path);
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
    std::vector<std::uint64_t> lengths;
    for (std::size_t s = 0; s + 1 < offsets.size(); ++s) lengths.push_back(offsets[s + 1] - offsets[s]);
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

// Context parallelism: every file of the plan so far becomes one file per
// CP rank. A dataset with a sequence axis keeps its rows and takes the
// rank's zigzag positions along that axis; packed data takes, of every
// document, the rank's zigzag tokens; everything else is the same for every
// CP rank.
void cut_context_parallel(const Leaves& leaves, const Resolution& resolution, const Sequences& sequences,
                          std::uint64_t degree, SplitPlan& plan) {
  check_context_parallel(leaves, resolution, sequences, degree);
  const FileGrid grid{plan.ranks, degree, plan.count};
  for (auto& entry : plan.pieces) {
    std::vector<RowMap> maps(grid.files());
    for (std::uint64_t f = 0; f < grid.files(); ++f) maps[f] = entry.second[grid.base_of(f)];
    entry.second = std::move(maps);
  }
  for (const NodeInfo* p : leaves.packed) {
    const Offsets& offsets = sequences.offsets.at(resolution.dataset_rule(p->path).offsets);
    std::vector<RowMap>& maps = plan.pieces.at(p->path);
    for (std::uint64_t f = 0; f < grid.files(); ++f)
      maps[f] = zigzag(documents_of(offsets, plan.sequences->runs[grid.microbatch_of(f)]), degree, grid.cp_rank_of(f));
  }
  for (const NodeInfo* n : leaves.sequence_axis) {
    std::vector<RowMap>& maps = plan.positions[n->path];
    for (std::uint64_t f = 0; f < grid.files(); ++f)
      maps.push_back(zigzag({{0, sequence_length(*n, resolution)}}, degree, grid.cp_rank_of(f)));
  }
  plan.cp_loads = cp_loads(leaves, resolution, sequences, degree);
  plan.cp = degree;
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
  to_slice_lengths(cuts, options.dp.degree);

  const std::size_t split_cuts = cuts.size();  // the sequence count may follow
  Sequences sequences;
  if (!leaves.offsets.empty()) {
    if (options.dp.degree != 1) throw usage_error("--dp-degree does not combine with packed sequences");
    sequences = check_sequences(leaves, resolution, offsets);
    plan.sequences = sequences.plan;
    cuts.push_back({leaves.offsets.front()->path, plan.sequences->sequences, "sequences"});
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
  if (options.cp_degree > 1) cut_context_parallel(leaves, resolution, sequences, options.cp_degree, plan);
  return plan;
}

}  // namespace mb
