// microbatch inspect: the tree of a file and, with a spec or -n, the plan.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/plan.hpp"
#include "core/remote.hpp"
#include "core/resolve.hpp"
#include "io/tree/prepare.hpp"
#include "specs/dtype.hpp"
#include "specs/emit.hpp"
#include "specs/manifest.hpp"

namespace mb::cli {
namespace {

struct InspectCommand {
  std::string input;
  SpecSource spec;
  std::string preset = "auto";
  SplitOptions partition;
  bool json = false;
};

std::string shape_text(const NodeInfo& n) { return n.null_space ? "null" : mb::shape_text(n.shape); }

std::string storage_text(const StorageInfo& s) {
  std::string out = s.layout;
  if (!s.chunks.empty()) {
    out += " [";
    out += fmt::format("{}]", fmt::join(s.chunks, ","));
  }
  for (const auto& f : s.filters) out += " " + f;
  if (!s.unreadable.empty()) out += " UNREADABLE";
  bool unlimited = false;
  for (const auto& m : s.max_shape) unlimited = unlimited || !m;
  if (unlimited) {
    out += " max(";
    for (std::size_t d = 0; d < s.max_shape.size(); ++d)
      out += (d ? "," : "") + (s.max_shape[d] ? fmt::format("{}", *s.max_shape[d]) : std::string("inf"));
    out += ")";
  }
  return out;
}

std::string rule_text(const LeafRule& r) {
  switch (r.mode) {
    case LeafRule::Mode::Split:
      if (r.sequence_axis) return fmt::format("split axis {}, sequence axis {}", r.axis, *r.sequence_axis);
      return fmt::format("split axis {}", r.axis);
    case LeafRule::Mode::Replicate: return "replicate";
    case LeafRule::Mode::Reduce:
      if (r.weighted()) return "reduce mean weighted by " + r.weight_text();
      return std::string("reduce ") + reducer_name(r.reducer);
    case LeafRule::Mode::Offsets: return "offsets";
    case LeafRule::Mode::Packed: return fmt::format("packed by {} on axis {}", r.offsets, r.axis);
    case LeafRule::Mode::PerSequence: return fmt::format("per sequence of {} on axis {}", r.offsets, r.axis);
    case LeafRule::Mode::Derive:
      if (r.element)
        return fmt::format("{} of {}, per file, as element {}", quantity_name(r.quantity), r.offsets, *r.element);
      return fmt::format("{} of {}, per file", quantity_name(r.quantity), r.offsets);
    case LeafRule::Mode::Drop: return "drop (not written by split)";
    case LeafRule::Mode::PaddedOffsets: return fmt::format("padded offsets of {} (not written by merge)", r.offsets);
    case LeafRule::Mode::RankBounds:
      return fmt::format("data-parallel rank bounds of {} (not written by merge)", r.offsets);
  }
  return "?";
}

// "0:4" (a Python slice), "0:8:2" for a strided run (--align).
std::string slice_text(const Segment& s) {
  if (s.stride == 1 || s.count < 2) return fmt::format("{}:{}", s.begin, s.stop());
  return fmt::format("{}:{}:{}", s.begin, s.stop(), s.stride);
}

// One file's rows (or positions) as slices joined by "+"; beyond four runs
// (a rank's piece of each of D slices, a packed document's two stripes
// each) the first two, "…", the last, and how many: "0:1+8:9+…+56:57 (8
// runs, 8 rows)". An empty piece is "0 rows".
std::string map_text(const RowMap& map) {
  if (rows_in(map) == 0) return "0 rows";
  std::string out;
  for (std::size_t i = 0; i < map.size(); ++i) {
    if (map.size() > 4 && i == 2) {
      out += "+…";
      i = map.size() - 1;
    }
    out += (out.empty() ? "" : "+") + slice_text(map[i]);
  }
  if (map.size() > 4) out += fmt::format(" ({} runs, {} rows)", map.size(), rows_in(map));
  return out;
}

// item(0), ..., item(n-1) joined by `sep`; beyond six the first three, "…"
// and the last, and "(n noun)": a line stays readable for many files.
std::string list_text(std::uint64_t n, const std::function<std::string(std::uint64_t)>& item, const char* sep,
                      const char* noun) {
  std::string out;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (n > 6 && i == 3) {
      out += sep + std::string("…");
      i = n - 1;
    }
    out += (i ? sep : "") + item(i);
  }
  if (n > 6) out += fmt::format(" ({} {})", n, noun);
  return out;
}

// Each file's input rows, microbatch by microbatch, grouped by the data-
// parallel rank that has files of its own (--layout per-rank) and by CP
// rank where their rows differ (packed documents cut in stripes; a
// sequence axis leaves every CP rank the rows of its microbatch):
// "rows 0:4+8:12, 4:8+12:16", "rows rank 0: 0:2, 2:4; rank 1: 4:6, 6:8".
std::string rows_text(const SplitPlan& plan, const std::vector<RowMap>& pieces) {
  const FileGrid grid = plan.grid();
  bool cp_alike = true;
  for (std::uint64_t f = 0; f < pieces.size(); ++f)
    cp_alike = cp_alike && pieces[f] == pieces[grid.file_of(grid.base_of(f), 0)];
  const std::uint64_t cp_groups = cp_alike ? 1 : grid.cp;
  const auto group = [&](std::uint64_t g) {
    const std::uint64_t rank = g / cp_groups, cp_rank = g % cp_groups;
    std::string label;
    if (grid.ranks > 1) label = fmt::format("rank {}", rank);
    if (cp_groups > 1) label += fmt::format("{}CP rank {}", label.empty() ? "" : " ", cp_rank);
    const auto file = [&](std::uint64_t i) {
      return map_text(pieces.at((rank * grid.cp + cp_rank) * grid.microbatches + i));
    };
    return (label.empty() ? "" : label + ": ") + list_text(grid.microbatches, file, ", ", "microbatches");
  };
  const char* groups = grid.ranks == 1 ? "CP ranks" : cp_groups == 1 ? "ranks" : "(rank, CP rank) pairs";
  return "rows " + list_text(grid.ranks * cp_groups, group, "; ", groups);
}

// The plan of one cut dataset: rows per file and, under CP, the positions
// of each CP rank along the sequence axis (alike in every microbatch).
std::string cut_text(const SplitPlan& plan, const std::string& path) {
  std::string out = rows_text(plan, plan.pieces.at(path));
  const auto positions = plan.positions.find(path);
  if (positions == plan.positions.end()) return out;
  const FileGrid grid = plan.grid();
  const auto rank = [&](std::uint64_t r) {
    return fmt::format("CP rank {} {}", r, map_text(positions->second[grid.file_of(0, r)]));
  };
  return out + "; positions " + list_text(plan.cp, rank, ", ", "CP ranks");
}

// Per CP rank: the tokens it holds and its causal attention work (the sum
// over its positions of position + 1), against the ideal total / C and what
// a contiguous cut would give.
void print_cp_loads(const SplitPlan& plan) {
  std::printf("context parallel: %llu CP ranks, zigzag (rank r holds stripes r and 2C-1-r of 2C)\n",
              static_cast<unsigned long long>(plan.cp));
  for (const CpLoad& load : plan.cp_loads) {
    std::printf("  %s: ideal work %.1f per rank\n", load.what.c_str(),
                static_cast<double>(load.total_work) / static_cast<double>(plan.cp));
    for (std::uint64_t r = 0; r < plan.cp && r < 16; ++r)
      std::printf("    CP rank %llu: %llu tokens, work %llu (a contiguous cut: %llu)\n",
                  static_cast<unsigned long long>(r), static_cast<unsigned long long>(load.tokens[r]),
                  static_cast<unsigned long long>(load.work[r]), static_cast<unsigned long long>(load.contiguous[r]));
  }
}

struct Row {
  std::string path, shape, dtype, storage, plan;
};

using Inspection = io::tree::Prepared;

// The largest of per-cell values against the ideal (their mean): the
// imbalance max/mean that the slowest rank of a step pays.
void print_imbalance(const char* what, const std::vector<std::uint64_t>& per_cell, std::uint64_t total) {
  const std::uint64_t largest = per_cell.empty() ? 0 : *std::max_element(per_cell.begin(), per_cell.end());
  const double ideal = per_cell.empty() ? 0.0 : static_cast<double>(total) / static_cast<double>(per_cell.size());
  std::printf("largest cell: %llu %s, ideal (mean) %.1f, imbalance max/mean %.3f\n",
              static_cast<unsigned long long>(largest), what, ideal,
              ideal > 0 ? static_cast<double>(largest) / ideal : 1.0);
}

// Per cell (data-parallel rank, microbatch): its sequences, tokens and
// causal attention work, and how close the largest comes to the ideal.
void print_sequences(const SequencePlan& seq, std::uint64_t count) {
  std::string sets;
  for (const auto& o : seq.offsets) sets += (sets.empty() ? "" : ", ") + o;
  const bool work = !seq.run_work.empty();
  std::printf("sequences: %llu, %llu tokens (summed over %s)", static_cast<unsigned long long>(seq.sequences),
              static_cast<unsigned long long>(seq.tokens), sets.c_str());
  if (work) std::printf(", causal attention work %llu (sum of L*(L+1)/2)", static_cast<unsigned long long>(seq.work));
  std::printf("\n");
  for (std::size_t c = 0; c < seq.runs.size() && c < 16; ++c) {
    const std::string cell = seq.ranks > 1 ? fmt::format("rank {} microbatch {}", c / count, c % count)
                                           : fmt::format("microbatch {}", c);
    std::printf("  %s: sequences [%llu, %llu) (%llu), %llu tokens", cell.c_str(),
                static_cast<unsigned long long>(seq.runs[c].begin), static_cast<unsigned long long>(seq.runs[c].end),
                static_cast<unsigned long long>(seq.runs[c].size()),
                static_cast<unsigned long long>(seq.run_tokens[c]));
    if (work) std::printf(", work %llu", static_cast<unsigned long long>(seq.run_work[c]));
    std::printf("\n");
  }
  if (seq.runs.size() > 16) std::printf("  …\n");
  print_imbalance("tokens", seq.run_tokens, seq.tokens);
  if (work) print_imbalance("work", seq.run_work, seq.work);
}

void print_text(const Inspection& in) {
  std::vector<Row> rows;
  for_each_node(in.tree, [&](const NodeInfo& n) {
    Row r{n.path, n.is_group() ? "group" : shape_text(n), n.is_group() ? "" : n.dtype,
          n.is_group() ? "" : storage_text(n.storage), ""};
    if (in.resolution && !n.is_group()) {
      const LeafRule& rule = in.resolution->dataset_rule(n.path);
      r.plan = rule_text(rule);
      if (in.plan && rule.cuts_rows()) r.plan += ": " + cut_text(*in.plan, n.path);
    }
    rows.push_back(r);
    for (const auto& a : n.attributes) {
      Row ar{"  @" + a.name, "= " + in.previews.at({n.path, a.name}), a.dtype, "", ""};
      if (in.resolution) ar.plan = rule_text(in.resolution->attribute_rule(n.path, a.name));
      rows.push_back(ar);
    }
  });
  std::size_t w[4] = {0, 0, 0, 0};
  for (const auto& r : rows) {
    if (r.path.rfind("  @", 0) == 0) continue;  // attribute lines do not widen the columns
    w[0] = std::max(w[0], r.path.size());
    w[1] = std::max(w[1], r.shape.size());
    w[2] = std::max(w[2], r.dtype.size());
    w[3] = std::max(w[3], r.storage.size());
  }
  std::printf("%s\n", in.input.shown().c_str());
  for (const auto& r : rows) {
    if (r.path.rfind("  @", 0) == 0) {
      std::printf("%s %s  %s%s%s\n", r.path.c_str(), r.shape.c_str(), r.dtype.c_str(), r.plan.empty() ? "" : "  -> ",
                  r.plan.c_str());
      continue;
    }
    std::string line = r.path + std::string(w[0] - r.path.size() + 2, ' ') + r.shape +
                       std::string(w[1] - r.shape.size() + 2, ' ') + r.dtype +
                       std::string(w[2] - r.dtype.size() + 2, ' ') + r.storage;
    if (!r.plan.empty()) line += std::string(w[3] - r.storage.size() + 2, ' ') + "-> " + r.plan;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
  }
  for_each_node(in.tree, [](const NodeInfo& n) {
    if (!n.storage.unreadable.empty()) std::printf("warning: %s\n", n.storage.unreadable.c_str());
  });
  if (in.preset)
    std::printf("preset: %s (%s)\n", in.preset->name.c_str(),
                in.preset->detected ? "detected; --preset none for the default spec" : "--preset");
  if (in.plan) {
    std::printf("plan: %llu microbatches\n", static_cast<unsigned long long>(in.plan->count));
    for (const auto& w2 : in.plan->warnings) std::printf("warning: %s\n", w2.c_str());
    if (in.plan->sequences) print_sequences(*in.plan->sequences, in.plan->count);
    if (in.plan->cp > 1) print_cp_loads(*in.plan);
  }
}

// "dtype" (numpy's), and "h5type" where numpy's cannot say everything.
void add_dtype(nlohmann::ordered_json& j, const ValueType& type) {
  j["dtype"] = specs::dtype_json(type);
  if (auto h5type = specs::h5type_json(type); !h5type.is_null()) j["h5type"] = h5type;
}

// A dataset's own fields: shape, type, storage, and what the spec and plan do to it.
void add_dataset(nlohmann::ordered_json& j, const NodeInfo& n, const Inspection& in) {
  using json = nlohmann::ordered_json;
  j["shape"] = n.null_space ? json(nullptr) : json(n.shape);
  add_dtype(j, n.value_type);
  j["layout"] = n.storage.layout;
  if (!n.storage.chunks.empty()) j["chunks"] = n.storage.chunks;
  auto& filters = j["filters"] = json::array();
  for (const auto& f : n.storage.filter_params)
    filters.push_back({{"id", f.id}, {"name", f.name}, {"optional", f.optional}, {"cd_values", f.cd_values}});
  auto max = json::array();
  for (const auto& m : n.storage.max_shape) max.push_back(m ? json(*m) : json(nullptr));
  j["max_shape"] = max;
  if (in.resolution) j["rule"] = specs::rule_json(in.resolution->dataset_rule(n.path), specs::RuleForm::Object);
  if (in.plan && in.plan->pieces.count(n.path)) {  // every leaf whose rows are cut
    j["rows"] = specs::row_maps_json(in.plan->pieces.at(n.path));
    const auto positions = in.plan->positions.find(n.path);
    if (positions != in.plan->positions.end()) j["positions"] = specs::row_maps_json(positions->second);
  }
}

nlohmann::ordered_json node_json(const NodeInfo& n, const Inspection& in) {
  using json = nlohmann::ordered_json;
  json j;
  j["path"] = specs::escape_name(n.path);
  j["kind"] = n.is_group() ? "group" : "dataset";
  if (!n.storage.unreadable.empty()) j["unreadable"] = n.storage.unreadable;
  if (!n.is_group()) add_dataset(j, n, in);
  auto attrs = json::array();
  for (const auto& a : n.attributes) {
    json ja{{"name", specs::escape_name(a.name)}, {"shape", a.null_space ? json(nullptr) : json(a.shape)}};
    add_dtype(ja, a.value_type);
    ja["value"] = in.values.at({n.path, a.name});
    if (in.resolution)
      ja["rule"] = specs::rule_json(in.resolution->attribute_rule(n.path, a.name), specs::RuleForm::Object);
    attrs.push_back(ja);
  }
  j["attributes"] = attrs;
  return j;
}

// The plan's fields: file count, warnings, sequences, context parallelism.
void add_plan(nlohmann::ordered_json& out, const SplitPlan& plan) {
  using json = nlohmann::ordered_json;
  out["chunks"] = plan.count;
  auto& warnings = out["warnings"] = json::array();
  for (const auto& w : plan.warnings) warnings.push_back(specs::printable_text(w));
  if (plan.sequences) out["sequences"] = specs::sequences_json(*plan.sequences);
  out["cp_degree"] = plan.cp;
  if (plan.cp > 1) {
    auto& loads = out["context_parallel"] = json::array();
    for (const CpLoad& l : plan.cp_loads)
      loads.push_back({{"of", specs::escape_name(l.what)}, {"tokens", l.tokens}, {"work", l.work},
                       {"contiguous_work", l.contiguous}, {"total_work", l.total_work}});
  }
}

void print_json(const Inspection& in) {
  using json = nlohmann::ordered_json;
  // Names and paths are escaped (specs::escape_name) so that they read back
  // exactly; values and dtypes are shown with other bytes than UTF-8 as \xNN.
  json out;
  out["format"] = "microbatch-inspect";
  out["version"] = 1;
  out["file"] = specs::escape_name(in.input.shown());
  out["preset"] = in.preset ? json{{"name", in.preset->name}, {"detected", in.preset->detected}} : json(nullptr);
  auto& nodes = out["tree"] = json::array();
  for_each_node(in.tree, [&](const NodeInfo& n) { nodes.push_back(node_json(n, in)); });
  if (in.plan) add_plan(out, *in.plan);
  std::printf("%s\n", out.dump(2).c_str());
}

void run_inspect(const InspectCommand& cmd) {
  const bool planning = cmd.partition.count || cmd.partition.micro_batch_size;
  io::tree::PrepareRequest request{.input = input_source(cmd.input),
                                   .spec = spec_request(cmd.spec, cmd.preset),
                                   .partition = {},
                                   .previews = true,
                                   .describe_unreadable = true};
  if (planning) request.partition = cmd.partition;
  const Inspection in = io::tree::prepare(request);
  if (cmd.json) {
    print_json(in);
  } else {
    print_text(in);
  }
}

}  // namespace

void setup_inspect(CLI::App& app) {
  auto cmd = std::make_shared<InspectCommand>();
  CLI::App* sub = app.add_subcommand("inspect", "Show a file's tree and what a spec will do to it");
  sub->footer(
      "Examples:\n"
      "  microbatch inspect batch.h5\n"
      "  microbatch inspect batch.h5 -s spec.json -n 4      # the plan: per-microbatch rows\n"
      "  microbatch inspect batch.h5 --json | jq .tree");
  sub->add_option("input", cmd->input, "HDF5 file, opened read-only")->required();
  add_spec_options(*sub, cmd->spec, "chunk-spec JSON to show the rule of every leaf");
  add_preset_option(*sub, cmd->preset);
  add_partition_options(*sub, cmd->partition);  // with -n or --micro-batch-size: the split plan
  sub->add_flag("--json", cmd->json, "machine-readable output");
  add_common_options(*sub);
  sub->callback([cmd] {
    apply_common_options();
    run_inspect(*cmd);
  });
}

}  // namespace mb::cli
