#pragma once
// manifest.json: what a split did, written last into the output directory;
// merge of a directory takes the file order, completeness, spec and options
// from it. Pure JSON: the options schema is written and read here only.
// The names of the files it lists: specs/file_names.hpp.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/layout.hpp"
#include "core/plan.hpp"
#include "specs/file_names.hpp"

namespace mb::specs {

inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kManifestFormat = "microbatch-manifest";
inline constexpr int kManifestVersion = 3;

// What a manifest's content digests are (io/publish/digest.hpp computes
// both): from version 3, XXH3-128 over the XXH3-128 digests of the file's
// 1 MiB blocks and its size ("xxh3_128_blocks"); version 2, still read,
// recorded XXH3-128 of the whole file ("xxh3_128").
enum class DigestKind { whole_file, blocks };
// The key of a file record's digest in a manifest ("xxh3_128_blocks", "xxh3_128").
const char* digest_key(DigestKind kind);

struct SplitDatasetRecord {
  int axis = 0;
  std::uint64_t length = 0;
  std::vector<RowMap> rows;  // per output file; written as [start, stop, step] slices
  // Context parallelism: the sequence axis, and per output file the
  // positions along it (empty: the dataset has none).
  std::optional<int> sequence_axis;
  std::vector<RowMap> positions;
  // --cp-pad: per output file, the rows it holds along the axis, pads
  // included ([0, length) as one slice); empty: the rows of `rows`.
  std::vector<RowMap> file_rows;
  // The rows file `file` holds along the axis.
  std::uint64_t held(std::size_t file) const { return rows_in(file_rows.empty() ? rows.at(file) : file_rows.at(file)); }
};

// One output file: its name (relative to the manifest's directory), size
// and content digest (32 hex digits, of the manifest's DigestKind), as
// published.
struct FileRecord {
  std::string name;
  std::uint64_t size = 0;
  std::string digest;
  friend bool operator==(const FileRecord&, const FileRecord&) = default;
};

struct Manifest {
  std::string tool_version;
  std::string source;
  nlohmann::ordered_json spec;  // the resolved spec
  SplitOptions options;         // the options that shaped the plan
  std::uint64_t microbatches = 0;
  std::vector<FileRecord> files;  // in order
  DigestKind digests = DigestKind::blocks;  // what the files' digests are
  // What identifies this split among others: the digest of its spec,
  // options and files (so two runs with the same result share it).
  std::string split_id;
  std::map<std::string, SplitDatasetRecord> datasets;
  std::optional<SequencePlan> sequences;  // packed sequences: runs and tokens per microbatch
  // --drop-last: rows of every split axis (sequences, when packed) left out
  // at the end of the batch; the files hold the rows before them.
  std::uint64_t dropped_rows = 0;

  // Per-rank layout: files per microbatch (the data-parallel degree); else 1.
  std::uint64_t ranks() const;
  // Where each file sits: rank, CP rank, microbatch.
  FileGrid grid() const { return {ranks(), options.cp_degree, microbatches}; }
};

// The manifest as written: indented JSON, but one line per split dataset
// (a batch can hold tens of thousands; `grep` finds one, and writing them
// costs a fraction of a fully indented document).
std::string manifest_text(const Manifest& manifest);

// The manifest's text in two parts, which split --shard records in its part
// record and finish assembles: the head (everything but the per-dataset
// records) as JSON, and the per-dataset records as written.
// manifest_text(m) == assemble_manifest(manifest_head(m), manifest_datasets_text(m)).
nlohmann::ordered_json manifest_head(const Manifest& manifest);
std::string manifest_datasets_text(const Manifest& manifest);
std::string assemble_manifest(const nlohmann::ordered_json& head, const std::string& datasets);

// A manifest's text read, checking its format, version, options and that
// it lists one plain file name per output. Throws mb::Error naming the
// manifest as `path`.
Manifest parse_manifest(const std::string& text, const std::string& path);

// The text the split id is the digest of: spec, options and file records.
std::string split_identity(const Manifest& manifest);
// The same from the manifest's spec and options JSON and its files.
std::string split_identity(const nlohmann::ordered_json& spec, const nlohmann::ordered_json& options,
                           const std::vector<FileRecord>& files);

// The split options as the manifest records them, and back.
nlohmann::ordered_json options_json(const SplitOptions& options);
SplitOptions options_from_json(const nlohmann::ordered_json& json);

// Packed sequences: offsets datasets, sequence and token totals, and per
// microbatch its sequence run [first, end) and tokens.
nlohmann::ordered_json sequences_json(const SequencePlan& sequences);

// Per output file, its rows as [start, stop, step] slices (Python semantics).
nlohmann::ordered_json row_maps_json(const std::vector<RowMap>& maps);

}  // namespace mb::specs
