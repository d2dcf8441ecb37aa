#include "core/plan.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mb {
namespace {

struct SplitLeaf {
  std::string path;
  std::uint64_t length;  // rows on the split axis; per shard with a data-parallel degree
};

// The split datasets with their split-axis lengths, in path order; refuses reducers.
std::vector<SplitLeaf> split_leaves(const NodeInfo& root, const Resolution& resolution) {
  std::vector<SplitLeaf> out;
  for_each_node(root, [&](const NodeInfo& n) {
    for (const auto& a : n.attributes)
      if (resolution.attribute_rule(n.path, a.name).mode == LeafRule::Mode::Reduce)
        throw Error("spec gives a reducer for attribute " + n.path + "@" + a.name +
                    ": a reducer only applies to merge");
    if (n.is_group()) return;
    const LeafRule& rule = resolution.dataset_rule(n.path);
    if (rule.mode == LeafRule::Mode::Reduce)
      throw Error("spec gives a reducer for " + n.path + ": a reducer only applies to merge");
    if (rule.mode == LeafRule::Mode::Split) out.push_back({n.path, n.shape.at(static_cast<std::size_t>(rule.axis))});
  });
  return out;
}

// With a data-parallel degree D, every split axis holds D equal shards, and
// the cut applies to the shard length.
void to_shard_lengths(std::vector<SplitLeaf>& leaves, std::uint64_t degree) {
  if (degree == 1) return;
  for (auto& leaf : leaves) {
    if (leaf.length % degree != 0)
      throw Error(leaf.path + " has " + std::to_string(leaf.length) +
                  " rows on its split axis, not divisible by --dp-degree " + std::to_string(degree));
    leaf.length /= degree;
  }
}

std::uint64_t count_by_size(const std::vector<SplitLeaf>& leaves, std::uint64_t size) {
  if (leaves.empty()) throw Error("--micro-batch-size needs at least one split dataset; the spec splits none");
  for (const auto& leaf : leaves)
    if (leaf.length != leaves.front().length)
      throw Error("--micro-batch-size needs every split axis to have the same length: " + leaves.front().path +
                  " has " + std::to_string(leaves.front().length) + " rows, " + leaf.path + " has " +
                  std::to_string(leaf.length));
  const std::uint64_t length = leaves.front().length;
  if (length == 0) throw Error("nothing to split: " + leaves.front().path + " has 0 rows on its split axis");
  return (length + size - 1) / size;
}

std::uint64_t count_by_chunks(const std::vector<SplitLeaf>& leaves, std::uint64_t n, OnShort on_short,
                              bool per_shard, std::vector<std::string>& warnings) {
  auto shortest = std::min_element(leaves.begin(), leaves.end(),
                                   [](const SplitLeaf& a, const SplitLeaf& b) { return a.length < b.length; });
  if (shortest == leaves.end() || shortest->length >= n) return n;
  const std::string why = shortest->path + " has " + std::to_string(shortest->length) + " rows on its split axis" +
                          (per_shard ? " per data-parallel shard" : "");
  switch (on_short) {
    case OnShort::Error:
      throw Error("cannot cut into " + std::to_string(n) + " microbatches: " + why +
                  " (--on-short downsize or empty allows it)");
    case OnShort::Downsize:
      if (shortest->length == 0) throw Error("cannot downsize: " + why);
      warnings.push_back("downsizing from " + std::to_string(n) + " to " + std::to_string(shortest->length) +
                         " microbatches: " + why);
      return shortest->length;
    case OnShort::Empty: return n;
  }
  return n;
}

}  // namespace

const char* reducer_name(Reducer r) {
  switch (r) {
    case Reducer::Sum: return "sum";
    case Reducer::Mean: return "mean";
    case Reducer::Min: return "min";
    case Reducer::Max: return "max";
  }
  return "?";
}

SplitPlan plan_split(const NodeInfo& root, const Resolution& resolution, const SplitOptions& options) {
  if (options.chunks.has_value() == options.micro_batch_size.has_value())
    throw usage_error("give exactly one of -n/--chunks and --micro-batch-size");
  if (options.dp.degree == 0) throw usage_error("--dp-degree must be at least 1");
  SplitPlan plan;
  auto leaves = split_leaves(root, resolution);
  to_shard_lengths(leaves, options.dp.degree);
  const std::uint64_t d = options.dp.degree;
  auto cut = [&](const SplitLeaf& leaf, const std::vector<Range>& pieces) {
    plan.pieces[leaf.path] = data_parallel_maps(leaf.length * d, options.dp, pieces);
  };
  if (options.micro_batch_size) {
    const std::uint64_t size = *options.micro_batch_size;
    if (size == 0) throw usage_error("--micro-batch-size must be at least 1");
    plan.count = count_by_size(leaves, size);
    if (plan.count > kMaxMicrobatches)
      throw usage_error("--micro-batch-size " + std::to_string(size) + " gives " + std::to_string(plan.count) +
                        " microbatches, more than the limit of " + std::to_string(kMaxMicrobatches));
    for (const auto& leaf : leaves) cut(leaf, split_by_size(leaf.length, size));
    return plan;
  }
  const std::uint64_t n = *options.chunks;
  if (n == 0) throw usage_error("-n/--chunks must be at least 1");
  if (n > kMaxMicrobatches)
    throw usage_error("-n " + std::to_string(n) + " is more than the limit of " + std::to_string(kMaxMicrobatches) +
                      " microbatches");
  plan.count = count_by_chunks(leaves, n, options.on_short, d > 1, plan.warnings);
  for (const auto& leaf : leaves) cut(leaf, array_split(leaf.length, plan.count));
  return plan;
}

}  // namespace mb
