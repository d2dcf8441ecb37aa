#include "io/verify/verify.hpp"

#include <fmt/format.h>
#include <hdf5.h>

#include <optional>
#include <set>

#include "core/error.hpp"
#include "io/h5/object.hpp"
#include "io/h5/space.hpp"
#include "io/merge/inputs.hpp"
#include "io/publish/digest.hpp"
#include "io/store/store.hpp"
#include "io/source/input.hpp"
#include "specs/manifest.hpp"

namespace mb::io::verify {
namespace {

// The length of `path` in `file` along `axis`, or a message saying why it has none.
struct Length {
  std::uint64_t rows = 0;
  std::string problem;
};
Length length_along(hid_t file, const Source& source, const std::string& path, std::size_t axis) {
  if (!h5::object_exists(file, path)) return {0, fmt::format("{}: holds no {}", source.shown(), path)};
  const h5::Location where{source.shown(), path};
  const h5::Id object = h5::open_object(file, path, where);
  if (h5::kind_of(object.get(), where) != H5I_DATASET)
    return {0, fmt::format("{}: {} is not a dataset", where.file, path)};
  const Shape dims = h5::dataset_space(object.get(), where).dims;
  if (axis >= dims.size())
    return {0, fmt::format("{}: {} has {} dimensions, no axis {}", where.file, path, dims.size(), axis)};
  return {dims[axis], {}};
}

// The first split dataset of file `index` whose rows (and, with context
// parallelism, positions) differ from the manifest's; empty when all agree.
std::string rows_problem(const specs::Manifest& manifest, const Source& source, std::size_t index) {
  const h5::Id file = source::open(source);
  for (const auto& [path, record] : manifest.datasets) {
    struct Axis {
      std::size_t axis;
      const std::vector<RowMap>* maps;
      const char* what;
    };
    const std::vector<RowMap>& rows = record.file_rows.empty() ? record.rows : record.file_rows;  // pads included
    std::vector<Axis> axes{{static_cast<std::size_t>(record.axis), &rows, "rows"}};
    if (record.sequence_axis && !record.positions.empty())
      axes.push_back({static_cast<std::size_t>(*record.sequence_axis), &record.positions, "positions"});
    for (const Axis& a : axes) {
      if (index >= a.maps->size())
        return fmt::format("{}: the manifest gives {} no {} for this file", source.shown(), path, a.what);
      const Length held = length_along(file.get(), source, path, a.axis);
      if (!held.problem.empty()) return held.problem;
      const std::uint64_t expected = rows_in((*a.maps)[index]);
      if (held.rows != expected)
        return fmt::format("{}: {} has {} {} on axis {}, but the manifest says {}", source.shown(), path, held.rows,
                           a.what, a.axis, expected);
    }
  }
  return {};
}

// What stands beside the manifest; none for an HTTP(S) location, which
// nothing lists, nor for a prefix the credentials may read but not list
// (`why` says so).
std::optional<std::vector<std::string>> names_beside(const store::Store& place, std::string& why) {
  std::vector<std::string> names;
  try {
    for (const auto& entry : place.list()) names.push_back(entry.name);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Data) throw;  // the store is down: a retry may help
    // An HTTP(S) location, or a prefix the credentials may read but not list (403: no s3:ListBucket).
    why = fmt::format("the prefix cannot be listed ({})", e.what());
    return std::nullopt;
  }
  return names;
}

// The names beside the manifest that it does not list and that are named as
// split outputs (microbatch-*.h5, rank-*, cp-*): what a glob would pick up
// with the split's files. Hidden temporaries and part records are the
// tools' own.
std::vector<std::string> extra_files(const std::vector<std::string>& names, const specs::Manifest& manifest) {
  std::set<std::string> listed{specs::kManifestName};
  for (const auto& f : manifest.files) listed.insert(f.name);
  std::set<std::string> extra;
  for (const auto& name : names)
    if (!listed.contains(name) && !name.starts_with(".") && specs::is_output_file_name(name)) extra.insert(name);
  return {extra.begin(), extra.end()};
}

// Size first (cheap, and a missing file needs no digest), then the digests
// of the files of the right size, all at once, then rows of the intact ones.
void check_files(const merge::MergeSources& sources, const store::Store& place, unsigned threads, Report& report) {
  const specs::Manifest& manifest = *sources.manifest;
  std::vector<Source> sized;
  std::vector<std::size_t> sized_index;
  for (std::size_t i = 0; i < manifest.files.size(); ++i) {
    const specs::FileRecord& record = manifest.files[i];
    const Source& file = sources.files[i];
    FileCheck& check = report.files.emplace_back(FileCheck{record.name, record.size, Problem::None, {}});
    const std::optional<std::uint64_t> size = place.size(record.name);
    if (!size) {
      check.problem = Problem::Missing;
      check.message = fmt::format("{}: missing", file.shown());
    } else if (*size != record.size) {
      check.problem = Problem::Size;
      check.message = fmt::format("{}: {} bytes, but the manifest says {}", file.shown(), *size, record.size);
    } else {
      sized.push_back(file);
      sized_index.push_back(i);
    }
  }
  const auto digests = publish::digest_files(sized, threads, manifest.digests);
  for (std::size_t k = 0; k < sized.size(); ++k) {
    FileCheck& check = report.files[sized_index[k]];
    if (digests[k].digest != manifest.files[sized_index[k]].digest) {
      check.problem = Problem::Digest;
      check.message = fmt::format("{}: its content digest differs from the manifest's: changed or replaced after "
                                  "the split",
                                  sized[k].shown());
    } else if (std::string rows = rows_problem(manifest, sized[k], sized_index[k]); !rows.empty()) {
      check.problem = Problem::Rows;
      check.message = std::move(rows);
    }
  }
}

}  // namespace

const char* problem_name(Problem problem) {
  switch (problem) {
    case Problem::None: return "intact";
    case Problem::Missing: return "missing";
    case Problem::Size: return "size";
    case Problem::Digest: return "digest";
    case Problem::Rows: return "rows";
  }
  return "intact";
}

bool Report::intact() const {
  for (const auto& f : files)
    if (f.problem != Problem::None) return false;
  return extra.empty();
}

Report verify(const Source& target, const std::optional<store::Member>& split, unsigned threads) {
  if (!split)
    throw usage_error(fmt::format("verify: {} is not a split directory: give the directory (a URL ending in '/')",
                                  target.shown()));
  if (!split->store->exists()) throw Error(fmt::format("{}: no such directory", target.shown()));
  const store::Store& place = *split->store;
  const merge::MergeSources sources = merge::find_sources({target}, merge::Unfinished::Refuse);
  if (!sources.manifest)
    throw Error(fmt::format("{}: no split there: give a split directory, or its URL ending in '/'", target.shown()));
  const specs::Manifest& manifest = *sources.manifest;
  if (publish::digest_text(specs::split_identity(manifest)) != manifest.split_id)
    throw Error(fmt::format("{}: its split_id does not match its spec, options and files: the manifest was edited",
                            sources.manifest_path));
  Report report;
  report.manifest = sources.manifest_path;
  report.split_id = manifest.split_id;
  check_files(sources, place, threads, report);
  if (const auto names = names_beside(place, report.unlisted)) {
    report.extra = extra_files(*names, manifest);
    report.listed = true;
  }
  return report;
}

}  // namespace mb::io::verify
