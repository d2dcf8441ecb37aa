#include "specs/manifest.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "specs/emit.hpp"
#include "specs/parse.hpp"

namespace mb::specs {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kOnShortNames[] = {"error", "downsize", "empty"};  // OnShort order
constexpr const char* kBalanceNames[] = {"tokens", "sequences", "attention"};  // Balance order
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

// Manifests of this version recorded XXH3-128 of whole files; they are read still.
constexpr int kWholeFileDigestsVersion = 2;

std::optional<std::uint64_t> optional_count(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<std::uint64_t>();
}

}  // namespace

// Everything but the per-dataset records.
json manifest_head(const Manifest& m) {
  json j;
  j["format"] = kManifestFormat;
  j["version"] = m.digests == DigestKind::blocks ? kManifestVersion : kWholeFileDigestsVersion;
  j["tool_version"] = m.tool_version;
  j["source"] = escape_name(m.source);  // a file name is bytes too
  j["chunks"] = m.microbatches;
  j["options"] = options_json(m.options);
  if (m.options.drop_last) j["dropped_rows"] = m.dropped_rows;
  auto files = json::array();
  for (const auto& f : m.files) files.push_back({{"name", f.name}, {"size", f.size}, {digest_key(m.digests), f.digest}});
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
  // A file's place in the list is its place in the split (its rows): the
  // name says which place that is, so entries moved or renamed are refused.
  // The pieces keep their input's extension: the first file tells which.
  const std::string extension = m.files.empty() ? ".h5" : piece_extension(m.files.front().name);
  for (std::uint64_t i = 0; i < m.files.size(); ++i) {
    const std::string expected = output_file_name(m.grid(), m.options.layout, i, extension);
    if (m.files[i].name != expected)
      throw Error(fmt::format("{}: entry {} of \"files\" is \"{}\", but file {} of this split is \"{}\" (were "
                              "entries reordered or renamed?)",
                              path, i, m.files[i].name, i, expected));
  }
}

// The manifest's "datasets" read as parse events (nlohmann's SAX
// interface) straight into records: no JSON document of 20,000 records is
// built and destroyed (a third of a small merge's manifest time). Depths:
// 1 the manifest, 2 "datasets", 3 a record, 4 its rows (or positions),
// 5 one file's slices, 6 one [start, stop, step] slice.
class DatasetsReader final : public nlohmann::json_sax<json> {
 public:
  std::map<std::string, SplitDatasetRecord> records;
  bool seen = false;  // the manifest has "datasets"

  bool start_object(std::size_t) override {
    ++depth_;
    if (depth_ == 2 && top_key_ == "datasets" && !seen) seen = in_ = true;
    if (!in_) return true;
    if (depth_ == 3) record_ = {};
    if (depth_ > 3) malformed("holds an object where a number or list belongs");
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) top_key_ = k;
    if (!in_) return true;
    if (depth_ == 2) path_ = k;
    if (depth_ == 3) field_ = k;
    return true;
  }
  bool end_object() override {
    if (in_ && depth_ == 3) finish();
    if (in_ && depth_ == 2) in_ = false;
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    if (!in_) return true;
    if (depth_ == 4 && field_ != "rows" && field_ != "positions" && field_ != "file_rows")
      malformed("has a list for " + field_);
    if (depth_ == 4 && field_ == "rows") rows_ = true;
    if (depth_ == 4 && field_ == "positions") positions_ = true;
    if (depth_ == 5) maps().emplace_back();
    if (depth_ == 6) slice_.clear();
    if (depth_ > 6) malformed("has lists nested too deep");
    return true;
  }
  bool end_array() override {
    if (in_ && depth_ == 6) end_slice();
    --depth_;
    return true;
  }
  bool number_unsigned(number_unsigned_t v) override { return number(v, false); }
  bool number_integer(number_integer_t v) override { return number(static_cast<std::uint64_t>(v), v < 0); }
  bool number_float(number_float_t, const string_t&) override { return other("a fraction"); }
  bool string(string_t&) override { return other("a string"); }
  bool boolean(bool) override { return other("a boolean"); }
  bool null() override { return other("null"); }
  bool binary(binary_t&) override { return other("binary data"); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw Error(std::string("malformed manifest: ") + e.what());
  }

 private:
  [[noreturn]] void malformed(const std::string& what) const {
    throw Error(fmt::format("malformed manifest: {} {}", depth_ == 2 ? "datasets" : "dataset " + path_, what));
  }
  bool other(const char* what) {
    if (in_) malformed(fmt::format("has {} where a number belongs", what));
    return true;
  }
  std::vector<RowMap>& maps() {
    return field_ == "rows" ? record_.rows : field_ == "positions" ? record_.positions : record_.file_rows;
  }
  bool number(std::uint64_t v, bool negative) {
    if (!in_) return true;
    if (depth_ == 6) {
      if (negative) malformed("has a negative slice bound");
      slice_.push_back(v);
    } else if (depth_ == 3 && (field_ == "axis" || field_ == "sequence_axis")) {
      const auto axis = static_cast<std::int64_t>(v);
      if (axis < INT32_MIN || axis > INT32_MAX) malformed("has an axis out of range");
      (field_ == "axis" ? axis_ : record_.sequence_axis) = static_cast<int>(axis);
    } else if (depth_ == 3 && field_ == "length" && !negative) {
      length_ = v;
    } else if (depth_ != 3 || field_ == "rows" || field_ == "positions" || field_ == "file_rows") {
      malformed("has a number where a list belongs");
    }
    return true;
  }
  void end_slice() {
    if (slice_.size() != 3) malformed("has a slice that is not [start, stop, step]");
    const std::uint64_t start = slice_[0], stop = slice_[1], step = slice_[2];
    if (step == 0 || stop < start) throw Error(fmt::format("malformed manifest: a slice of {} is empty or falls", path_));
    maps().back().push_back({start, (stop - start + step - 1) / step, step});
  }
  void finish() {
    if (!axis_ || !length_ || !rows_) malformed("lacks its axis, length or rows");
    if (record_.sequence_axis.has_value() != positions_) malformed("has a sequence axis without positions or the reverse");
    if (!record_.file_rows.empty() && record_.file_rows.size() != record_.rows.size())
      malformed("has file_rows for another number of files than rows");
    record_.axis = *axis_;
    record_.length = *length_;
    axis_.reset();
    length_.reset();
    rows_ = positions_ = false;
    if (!records.emplace(unescape_name(path_), std::move(record_)).second)  // paths are written escaped
      malformed("is listed twice");
  }

  int depth_ = 0;
  bool in_ = false;
  std::string top_key_, path_, field_;
  SplitDatasetRecord record_;
  std::optional<int> axis_;
  std::optional<std::uint64_t> length_;
  bool rows_ = false, positions_ = false;
  std::vector<std::uint64_t> slice_;
};

}  // namespace

const char* digest_key(DigestKind kind) { return kind == DigestKind::blocks ? "xxh3_128_blocks" : "xxh3_128"; }

std::string split_identity(const Manifest& m) { return split_identity(m.spec, options_json(m.options), m.files); }

std::string split_identity(const json& spec, const json& options, const std::vector<FileRecord>& records) {
  auto files = json::array();
  for (const auto& f : records) files.push_back({f.name, f.size, f.digest});
  return json{{"spec", spec}, {"options", options}, {"files", files}}.dump();
}

std::uint64_t Manifest::ranks() const { return options.layout == FileLayout::PerRank ? options.dp.degree : 1; }

json options_json(const SplitOptions& o) {
  json out = {{"chunks", o.count ? json(*o.count) : nullptr},
          {"micro_batch_size", o.micro_batch_size ? json(*o.micro_batch_size) : nullptr},
          {"drop_last", o.drop_last},
          {"on_short", kOnShortNames[static_cast<int>(o.on_short)]},
          {"dp_degree", o.dp.degree},
          {"align", o.dp.align},
          {"balance", kBalanceNames[static_cast<int>(o.balance)]},
          {"layout", kLayoutNames[static_cast<int>(o.layout)]},
          {"cp_degree", o.cp_degree}};
  if (o.cp_pad) out["cp_pad"] = true;  // absent otherwise: manifests of splits without it are unchanged
  return out;
}

SplitOptions options_from_json(const json& j) {
  SplitOptions o;
  o.count = optional_count(j, "chunks");
  o.micro_batch_size = optional_count(j, "micro_batch_size");
  o.drop_last = j.value("drop_last", false);
  o.on_short = named(j, "on_short", kOnShortNames, OnShort::Error);
  o.dp.degree = j.value("dp_degree", std::uint64_t{1});
  o.dp.align = j.value("align", false);
  o.balance = named(j, "balance", kBalanceNames, Balance::Tokens);
  o.layout = named(j, "layout", kLayoutNames, FileLayout::PerMicrobatch);
  o.cp_degree = j.value("cp_degree", std::uint64_t{1});
  o.cp_pad = j.value("cp_pad", false);
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

namespace {

// Row maps as [[[start, stop, step], ...] per file], the text nlohmann's
// compact dump gives row_maps_json, written directly: a JSON document per
// record cost more than all the rest of a split's manifest (20,000 datasets).
void append_row_maps(std::string& out, const std::vector<RowMap>& maps) {
  out += '[';
  for (std::size_t f = 0; f < maps.size(); ++f) {
    out += f ? ",[" : "[";
    for (std::size_t k = 0; k < maps[f].size(); ++k) {
      const Segment& seg = maps[f][k];
      fmt::format_to(std::back_inserter(out), "{}[{},{},{}]", k ? "," : "", seg.begin, seg.stop(), seg.stride);
    }
    out += ']';
  }
  out += ']';
}

// What a merge checks a file's rank bounds against, and a refusal names:
// the cells (runs, rank-major) and how many ranks they are cut for.
SequencePlan sequences_from_json(const json& j) {
  SequencePlan seq;
  for (const auto& path : j.at("offsets")) seq.offsets.push_back(unescape_name(path.get<std::string>()));
  seq.sequences = j.at("count").get<std::uint64_t>();
  seq.tokens = j.at("tokens").get<std::uint64_t>();
  seq.ranks = j.value("dp_degree", std::uint64_t{1});
  for (const auto& r : j.at("runs")) seq.runs.push_back({r.at(0).get<std::uint64_t>(), r.at(1).get<std::uint64_t>()});
  if (seq.ranks == 0 || seq.runs.size() % seq.ranks != 0)
    throw Error(fmt::format("malformed manifest: {} sequence runs for dp_degree {}", seq.runs.size(), seq.ranks));
  return seq;
}

}  // namespace

std::string manifest_datasets_text(const Manifest& m) {
  std::string datasets = ",\n  \"datasets\": {";
  bool first = true;
  for (const auto& [path, record] : m.datasets) {
    datasets += first ? "\n    " : ",\n    ";
    first = false;
    datasets += json(escape_name(path)).dump();
    fmt::format_to(std::back_inserter(datasets), ": {{\"axis\":{},\"length\":{},\"rows\":", record.axis,
                   record.length);
    append_row_maps(datasets, record.rows);
    if (record.sequence_axis) {
      fmt::format_to(std::back_inserter(datasets), ",\"sequence_axis\":{},\"positions\":", *record.sequence_axis);
      append_row_maps(datasets, record.positions);
    }
    if (!record.file_rows.empty()) {
      datasets += ",\"file_rows\":";
      append_row_maps(datasets, record.file_rows);
    }
    datasets += '}';
  }
  datasets += m.datasets.empty() ? "}" : "\n  }";
  return datasets;
}

json sequences_json(const SequencePlan& seq) {
  auto runs = json::array();
  for (const auto& r : seq.runs) runs.push_back({r.begin, r.end});
  auto offsets = json::array();
  for (const auto& path : seq.offsets) offsets.push_back(escape_name(path));
  json out = {{"offsets", offsets}, {"count", seq.sequences}, {"tokens", seq.tokens}};
  if (!seq.run_work.empty()) out["work"] = seq.work;
  if (seq.ranks > 1) out["dp_degree"] = seq.ranks;  // runs are then cells, rank-major
  out["runs"] = runs;
  out["run_tokens"] = seq.run_tokens;
  if (!seq.run_work.empty()) out["run_work"] = seq.run_work;
  return out;
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

Manifest parse_manifest(const std::string& text, const std::string& path) {
  Manifest m;
  try {
    // Parsed twice: ordered without "datasets" (the spec keeps its keys' order), then "datasets" alone as
    // events (DatasetsReader): an ordered object finds a key by linear search, quadratic over 20,000
    // datasets (1.2 s).
    const auto without_datasets = [](int depth, json::parse_event_t event, const json& parsed) {
      return depth != 1 || event != json::parse_event_t::key || parsed != "datasets";
    };
    const auto j = json::parse(text, without_datasets);
    if (j.at("format") != kManifestFormat) throw Error("not a microbatch manifest");
    if (j.at("version") == kWholeFileDigestsVersion)
      m.digests = DigestKind::whole_file;
    else if (j.at("version") != kManifestVersion)
      throw Error(fmt::format("manifest version {} is not supported (expected {} or {})", j.at("version").dump(),
                              kManifestVersion, kWholeFileDigestsVersion));
    m.tool_version = j.value("tool_version", std::string());
    m.source = unescape_name(j.value("source", std::string()));
    m.microbatches = j.at("chunks").get<std::uint64_t>();
    if (j.contains("sequences")) m.sequences = sequences_from_json(j.at("sequences"));
    m.options = options_from_json(j.at("options"));
    m.dropped_rows = j.value("dropped_rows", std::uint64_t{0});
    for (const auto& f : j.at("files"))
      m.files.push_back({f.at("name").get<std::string>(), f.at("size").get<std::uint64_t>(),
                         f.at(digest_key(m.digests)).get<std::string>()});
    m.split_id = j.at("split_id").get<std::string>();
    m.spec = j.at("spec");
    DatasetsReader datasets;
    json::sax_parse(text, &datasets);
    if (!datasets.seen) throw Error("malformed manifest: no datasets");
    m.datasets = std::move(datasets.records);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed manifest: {}", path, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
  check_files(m, path);
  return m;
}

}  // namespace mb::specs
