#include "io/manifest.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace mb::io {

namespace {

// Everything but the per-dataset records.
nlohmann::ordered_json manifest_head(const Manifest& m) {
  nlohmann::ordered_json j;
  j["format"] = kManifestFormat;
  j["version"] = kManifestVersion;
  j["tool_version"] = m.tool_version;
  j["source"] = m.source;
  j["chunks"] = m.chunks;
  j["options"] = m.options;
  j["files"] = m.files;
  if (m.ranks > 1 || m.options.value("layout", "") == "per-rank") {
    auto placement = nlohmann::ordered_json::array();
    const std::uint64_t per_rank = m.files.size() / std::max<std::uint64_t>(m.ranks, 1);
    for (std::size_t f = 0; f < m.files.size(); ++f)
      placement.push_back({{"rank", f / per_rank}, {"microbatch", f % per_rank}});
    j["placement"] = placement;
  }
  j["spec"] = m.spec;
  if (m.sequences) j["sequences"] = sequences_json(*m.sequences);
  return j;
}

}  // namespace

std::string manifest_text(const Manifest& m) {
  std::string text = manifest_head(m).dump(2);  // "{\n  ...\n}"
  std::string datasets = ",\n  \"datasets\": {";
  bool first = true;
  for (const auto& [path, rec] : m.datasets) {
    datasets += first ? "\n    " : ",\n    ";
    first = false;
    datasets += nlohmann::ordered_json(path).dump() + ": ";
    datasets += nlohmann::ordered_json{{"axis", rec.axis}, {"length", rec.length}, {"rows", row_maps_json(rec.rows)}}
                    .dump();
  }
  datasets += m.datasets.empty() ? "}" : "\n  }";
  text.insert(text.size() - 2, datasets);  // before the closing "\n}"
  return text + "\n";
}

nlohmann::ordered_json sequences_json(const SequencePlan& seq) {
  auto runs = nlohmann::ordered_json::array();
  for (const auto& r : seq.runs) runs.push_back({r.begin, r.end});
  return {{"offsets", seq.offsets}, {"count", seq.sequences}, {"tokens", seq.tokens},
          {"runs", runs},           {"run_tokens", seq.run_tokens}};
}

nlohmann::ordered_json row_maps_json(const std::vector<RowMap>& maps) {
  auto rows = nlohmann::ordered_json::array();
  for (const auto& map : maps) {
    auto slices = nlohmann::ordered_json::array();
    for (const auto& seg : map) slices.push_back({seg.begin, seg.stop(), seg.stride});
    rows.push_back(slices);
  }
  return rows;
}

Manifest read_manifest(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kManifestName).string();
  std::ifstream in(path);
  if (!in)
    throw Error(path + ": no manifest (is " + dir + " the output of a finished split? merge also takes the files)");
  Manifest m;
  try {
    // Merge needs neither the per-dataset rows (it recomputes them from the
    // microbatches' lengths) nor their cost: a large manifest is mostly those.
    const auto skip_datasets = [](int depth, nlohmann::ordered_json::parse_event_t event,
                                  const nlohmann::ordered_json& parsed) {
      return !(depth == 1 && event == nlohmann::ordered_json::parse_event_t::key && parsed == "datasets");
    };
    const auto j = nlohmann::ordered_json::parse(in, skip_datasets);
    if (j.at("format") != kManifestFormat) throw Error(path + ": not a microbatch manifest");
    if (j.at("version") != kManifestVersion)
      throw Error(path + ": manifest version " + j.at("version").dump() + " is not supported (expected " +
                  std::to_string(kManifestVersion) + ")");
    m.tool_version = j.at("tool_version").get<std::string>();
    m.source = j.at("source").get<std::string>();
    m.chunks = j.at("chunks").get<std::uint64_t>();
    m.options = j.at("options");
    m.files = j.at("files").get<std::vector<std::string>>();
    m.spec = j.at("spec");
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": malformed manifest: " + e.what());
  }
  m.ranks = m.options.value("layout", "") == "per-rank" ? m.options.value("dp_degree", std::uint64_t{1}) : 1;
  if (m.files.size() != m.chunks * m.ranks)
    throw Error(path + ": manifest lists " + std::to_string(m.files.size()) + " files for " +
                std::to_string(m.chunks) + " microbatches of " + std::to_string(m.ranks) + " ranks");
  for (const auto& f : m.files)
    if (f.empty() || f.find('/') != std::string::npos)
      throw Error(path + ": manifest file name \"" + f + "\" is not a plain file name");
  return m;
}

namespace {
std::string padded(std::uint64_t index, std::uint64_t count) {
  const std::size_t width = std::max<std::size_t>(5, std::to_string(count == 0 ? 0 : count - 1).size());
  std::string digits = std::to_string(index);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}
}  // namespace

std::string output_file_name(const SplitPlan& plan, std::uint64_t file) {
  const std::string microbatch = "microbatch-" + padded(file % plan.count, plan.count) + ".h5";
  if (plan.layout == FileLayout::PerMicrobatch) return microbatch;
  return "rank-" + padded(file / plan.count, plan.ranks) + "-" + microbatch;
}

}  // namespace mb::io
