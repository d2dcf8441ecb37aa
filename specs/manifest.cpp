#include "specs/manifest.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "specs/emit.hpp"
#include "specs/parse.hpp"

namespace mb::specs {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kOnShortNames[] = {"error", "downsize", "empty"};  // OnShort order
constexpr const char* kBalanceNames[] = {"tokens", "sequences"};       // Balance order
constexpr const char* kLayoutNames[] = {"per-microbatch", "per-rank"};  // FileLayout order

// `json[key]` as one of `names` (by position), or `fallback` when absent.
template <typename Enum, std::size_t N>
Enum named(const json& j, const char* key, const char* const (&names)[N], Enum fallback) {
  if (!j.contains(key)) return fallback;
  const auto text = j.at(key).get<std::string>();
  for (std::size_t i = 0; i < N; ++i)
    if (text == names[i]) return static_cast<Enum>(i);
  throw Error(fmt::format("malformed manifest: options.{} is \"{}\", not one of the known values", key, text));
}

std::optional<std::uint64_t> optional_count(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<std::uint64_t>();
}

}  // namespace

// Everything but the per-dataset records.
json manifest_head(const Manifest& m) {
  json j;
  j["format"] = kManifestFormat;
  j["version"] = kManifestVersion;
  j["tool_version"] = m.tool_version;
  j["source"] = escape_name(m.source);  // a file name is bytes too
  j["chunks"] = m.microbatches;
  j["options"] = options_json(m.options);
  auto files = json::array();
  for (const auto& f : m.files) files.push_back({{"name", f.name}, {"size", f.size}, {"xxh3_128", f.digest}});
  j["split_id"] = m.split_id;
  j["files"] = files;
  if (m.options.layout == FileLayout::PerRank || m.options.cp_degree > 1) {
    auto placement = json::array();
    const FileGrid grid = m.grid();
    for (std::size_t f = 0; f < m.files.size(); ++f) {
      json at;
      if (m.options.layout == FileLayout::PerRank) at["rank"] = grid.rank_of(f);
      if (m.options.cp_degree > 1) at["cp_rank"] = grid.cp_rank_of(f);
      at["microbatch"] = grid.microbatch_of(f);
      placement.push_back(at);
    }
    j["placement"] = placement;
  }
  j["spec"] = m.spec;
  if (m.sequences) j["sequences"] = sequences_json(*m.sequences);
  return j;
}

namespace {

void check_files(const Manifest& m, const std::string& path) {
  if (m.files.size() != m.grid().files())
    throw Error(fmt::format("{}: manifest lists {} files for {} microbatches of {} ranks and {} CP ranks", path,
                            m.files.size(), m.microbatches, m.ranks(), m.options.cp_degree));
  for (const auto& f : m.files)
    if (f.name.empty() || f.name.find('/') != std::string::npos || f.name == "." || f.name == "..")
      throw Error(fmt::format("{}: manifest file name \"{}\" is not a plain file name", path, f.name));
}

std::string padded(std::uint64_t index, std::uint64_t count) {
  const std::size_t width = std::max<std::size_t>(5, fmt::formatted_size("{}", count == 0 ? 0 : count - 1));
  return fmt::format("{:0{}}", index, width);
}

// Unordered JSON: the manifest's "datasets" are read that way (parse_manifest).
using Unordered = nlohmann::json;

// Per file, [start, stop, step] slices back into row maps.
std::vector<RowMap> row_maps_from_json(const Unordered& files, const std::string& path) {
  std::vector<RowMap> out;
  for (const auto& file : files) {
    RowMap map;
    for (const auto& slice : file) {
      const auto start = slice.at(0).get<std::uint64_t>(), stop = slice.at(1).get<std::uint64_t>();
      const auto step = slice.at(2).get<std::uint64_t>();
      if (step == 0 || stop < start) throw Error(fmt::format("malformed manifest: a slice of {} is empty or falls", path));
      map.push_back({start, (stop - start + step - 1) / step, step});
    }
    out.push_back(std::move(map));
  }
  return out;
}

// Each split dataset's axis, length and rows per file.
std::map<std::string, SplitDatasetRecord> datasets_from_json(const Unordered& j) {
  std::map<std::string, SplitDatasetRecord> out;
  for (const auto& [path, record] : j.items()) {
    SplitDatasetRecord r{record.at("axis").get<int>(), record.at("length").get<std::uint64_t>(), {}, {}, {}};
    r.rows = row_maps_from_json(record.at("rows"), path);
    if (record.contains("sequence_axis")) {
      r.sequence_axis = record.at("sequence_axis").get<int>();
      r.positions = row_maps_from_json(record.at("positions"), path);
    }
    out.emplace(unescape_name(path), std::move(r));  // paths are written escaped
  }
  return out;
}

}  // namespace

std::string split_identity(const Manifest& m) { return split_identity(m.spec, options_json(m.options), m.files); }

std::string split_identity(const json& spec, const json& options, const std::vector<FileRecord>& records) {
  auto files = json::array();
  for (const auto& f : records) files.push_back({f.name, f.size, f.digest});
  return json{{"spec", spec}, {"options", options}, {"files", files}}.dump();
}

std::uint64_t Manifest::ranks() const { return options.layout == FileLayout::PerRank ? options.dp.degree : 1; }

json options_json(const SplitOptions& o) {
  return {{"chunks", o.count ? json(*o.count) : nullptr},
          {"micro_batch_size", o.micro_batch_size ? json(*o.micro_batch_size) : nullptr},
          {"on_short", kOnShortNames[static_cast<int>(o.on_short)]},
          {"dp_degree", o.dp.degree},
          {"align", o.dp.align},
          {"balance", kBalanceNames[static_cast<int>(o.balance)]},
          {"layout", kLayoutNames[static_cast<int>(o.layout)]},
          {"cp_degree", o.cp_degree}};
}

SplitOptions options_from_json(const json& j) {
  SplitOptions o;
  o.count = optional_count(j, "chunks");
  o.micro_batch_size = optional_count(j, "micro_batch_size");
  o.on_short = named(j, "on_short", kOnShortNames, OnShort::Error);
  o.dp.degree = j.value("dp_degree", std::uint64_t{1});
  o.dp.align = j.value("align", false);
  o.balance = named(j, "balance", kBalanceNames, Balance::Tokens);
  o.layout = named(j, "layout", kLayoutNames, FileLayout::PerMicrobatch);
  o.cp_degree = j.value("cp_degree", std::uint64_t{1});
  if (o.dp.degree == 0) throw Error("malformed manifest: options.dp_degree is 0");
  if (o.cp_degree == 0) throw Error("malformed manifest: options.cp_degree is 0");
  return o;
}

std::string manifest_text(const Manifest& m) { return assemble_manifest(manifest_head(m), manifest_datasets_text(m)); }

std::string assemble_manifest(const json& head, const std::string& datasets) {
  std::string text = head.dump(2);  // "{\n  ...\n}"
  text.insert(text.size() - 2, datasets);  // before the closing "\n}"
  return text + "\n";
}

std::string manifest_datasets_text(const Manifest& m) {
  std::string datasets = ",\n  \"datasets\": {";
  bool first = true;
  for (const auto& [path, record] : m.datasets) {
    datasets += first ? "\n    " : ",\n    ";
    first = false;
    datasets += json(escape_name(path)).dump() + ": ";
    json entry{{"axis", record.axis}, {"length", record.length}, {"rows", row_maps_json(record.rows)}};
    if (record.sequence_axis) {
      entry["sequence_axis"] = *record.sequence_axis;
      entry["positions"] = row_maps_json(record.positions);
    }
    datasets += entry.dump();
  }
  datasets += m.datasets.empty() ? "}" : "\n  }";
  return datasets;
}

json sequences_json(const SequencePlan& seq) {
  auto runs = json::array();
  for (const auto& r : seq.runs) runs.push_back({r.begin, r.end});
  auto offsets = json::array();
  for (const auto& path : seq.offsets) offsets.push_back(escape_name(path));
  return {{"offsets", offsets}, {"count", seq.sequences}, {"tokens", seq.tokens},
          {"runs", runs},           {"run_tokens", seq.run_tokens}};
}

json row_maps_json(const std::vector<RowMap>& maps) {
  auto rows = json::array();
  for (const auto& map : maps) {
    auto slices = json::array();
    for (const auto& seg : map) slices.push_back({seg.begin, seg.stop(), seg.stride});
    rows.push_back(slices);
  }
  return rows;
}

Manifest read_manifest(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kManifestName).string();
  std::ifstream in(path);
  if (!in)
    throw Error(fmt::format("{}: no manifest (is {} the output of a finished split? merge also takes the files)",
                            path, dir));
  std::stringstream text;
  text << in.rdbuf();
  return parse_manifest(text.str(), path);
}

Manifest parse_manifest(const std::string& text, const std::string& path) {
  Manifest m;
  try {
    // Parsed twice: ordered without "datasets" (the spec keeps its keys' order), and unordered for "datasets":
    // an ordered object finds a key by linear search, quadratic over 20,000 datasets (1.2 s). (Without a
    // callback: nlohmann's callback parser looks for discarded members at the end of every object, which is
    // quadratic too.)
    const auto without_datasets = [](int depth, json::parse_event_t event, const json& parsed) {
      return depth != 1 || event != json::parse_event_t::key || parsed != "datasets";
    };
    const auto j = json::parse(text, without_datasets);
    if (j.at("format") != kManifestFormat) throw Error("not a microbatch manifest");
    if (j.at("version") != kManifestVersion)
      throw Error(fmt::format("manifest version {} is not supported (expected {})", j.at("version").dump(),
                              kManifestVersion));
    m.microbatches = j.at("chunks").get<std::uint64_t>();
    m.options = options_from_json(j.at("options"));
    for (const auto& f : j.at("files"))
      m.files.push_back({f.at("name").get<std::string>(), f.at("size").get<std::uint64_t>(),
                         f.at("xxh3_128").get<std::string>()});
    m.split_id = j.at("split_id").get<std::string>();
    m.spec = j.at("spec");
    m.datasets = datasets_from_json(Unordered::parse(text).at("datasets"));
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed manifest: {}", path, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
  check_files(m, path);
  return m;
}

std::string output_file_name(const SplitPlan& plan, std::uint64_t file) {
  const FileGrid grid = plan.grid();
  std::string name = "microbatch-" + padded(grid.microbatch_of(file), plan.count) + ".h5";
  if (plan.cp > 1) name = "cp-" + padded(grid.cp_rank_of(file), plan.cp) + "-" + name;
  if (plan.layout == FileLayout::PerRank) name = "rank-" + padded(grid.rank_of(file), plan.ranks) + "-" + name;
  return name;
}

}  // namespace mb::specs
