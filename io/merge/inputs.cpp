#include "io/merge/inputs.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/store/place.hpp"
#include "specs/journal.hpp"

namespace mb::io::merge {
namespace {
namespace fs = std::filesystem;

// The manifest beside `file` that lists it, if any: (manifest path, index).
struct Listing {
  std::string manifest_path;
  std::size_t index = 0;
};

// The manifest `place` holds as `name`, or none when it is not there.
std::optional<specs::Manifest> manifest_in(const store::Store& place, const std::string& name) {
  const std::optional<std::string> text = place.read_text(name);
  if (!text) return std::nullopt;
  return specs::parse_manifest(*text, place.source(name).name());
}

// The manifest beside a file, if one is there. A presigned URL (one with a
// query) signs that one object: its neighbours cannot be asked for, so it
// is merged as a plain file.
class ManifestCache {
 public:
  std::optional<Listing> listing(const Source& file) {
    if (file.name().find('?') != std::string::npos) return std::nullopt;
    const store::Member member = store::open_member(file.name(), file.settings());
    const std::string path = member.store->source(specs::kManifestName).name();
    auto it = manifests_.find(path);
    if (it == manifests_.end()) it = manifests_.emplace(path, manifest_in(*member.store, specs::kManifestName)).first;
    if (!it->second) return std::nullopt;
    const auto& files = it->second->files;
    for (std::size_t i = 0; i < files.size(); ++i)
      if (files[i].name == member.name) return Listing{path, i};
    return std::nullopt;
  }
  const specs::Manifest& at(const std::string& path) const { return *manifests_.at(path); }

 private:
  std::map<std::string, std::optional<specs::Manifest>> manifests_;
};

// Files beside a manifest: all of them its files, all of its files, in its order.
void check_listed(const std::vector<Source>& files, const std::vector<std::optional<Listing>>& listings,
                  const specs::Manifest& manifest, const std::string& manifest_path) {
  std::size_t first = 0;
  while (!listings[first]) ++first;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!listings[i])
      throw Error(fmt::format("{}: not listed in {}, while {} is: these are files of different splits",
                              files[i].shown(), manifest_path, files[first].shown()));
    if (listings[i]->manifest_path != manifest_path)
      throw Error(fmt::format("{}: belongs to {}, while {} belongs to {}: these are files of different splits",
                              files[i].shown(), listings[i]->manifest_path, files[first].shown(), manifest_path));
  }
  const std::string what_to_do = fmt::format(
      "give the directory (merge {}) or all {} files in its order", fs::path(manifest_path).parent_path().string(),
      manifest.files.size());
  for (std::size_t i = 0; i < files.size(); ++i)
    if (listings[i]->index != i)
      throw Error(fmt::format("{}: is microbatch file {} of {}, given as input {}; {}", files[i].shown(), listings[i]->index,
                              manifest_path, i, what_to_do));
  if (files.size() != manifest.files.size())
    throw Error(fmt::format("{}: lists {} files, {} given; {}", manifest_path, manifest.files.size(), files.size(),
                            what_to_do));
}

// The number of journal entries of an unfinished split in the place that
// holds `member`, when there are any and no manifest. None as well where
// the place cannot be listed (an HTTP(S) location, a prefix whose listing
// is not allowed, a directory that is not there): the check only spares the
// user a partial merge, and the files are still read and checked.
std::optional<std::size_t> unfinished_split(const Source& member) {
  if (member.name().find('?') != std::string::npos) return std::nullopt;  // a presigned URL signs one object
  try {
    const store::Member place = store::open_member(member.name(), member.settings());
    std::size_t entries = 0;
    for (const store::Entry& e : place.store->list()) {
      if (e.name == specs::kManifestName) return std::nullopt;
      entries += specs::is_journal_name(e.name) ? 1 : 0;
    }
    if (entries > 0) return entries;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Data && e.kind() != ErrorKind::Environment) throw;  // a stop, above all
    spdlog::debug("{}: its place not listed for a journal ({})", member.shown(), e.what());
  }
  return std::nullopt;
}

// What finishes an unfinished split: its own command again, with --resume.
constexpr const char* kFinishIt = "finish it by running its split command again with --resume (it keeps what is "
                                  "there)";

// A split directory (`shown` in messages) whose manifest is missing, when
// journal entries say why.
void refuse_unfinished_directory(const Source& manifest, const std::string& shown) {
  if (const auto entries = unfinished_split(manifest))
    throw Error(fmt::format("{}: an unfinished split: {} files published by split --resume (a journal entry beside "
                            "each) and no {}; {}",
                            shown, *entries, specs::kManifestName, kFinishIt));
}

// Files no manifest knows: none of them in a place that holds an
// unfinished split, unless allowed. Each place is listed once.
void refuse_unfinished_files(const std::vector<Source>& files) {
  std::set<std::string> seen;  // the places, by the manifest each would hold
  for (const auto& file : files) {
    if (!seen.insert(file.beside(specs::kManifestName).name()).second) continue;
    if (const auto entries = unfinished_split(file))
      throw Error(fmt::format("{}: a file of an unfinished split ({} journal entries of split --resume beside it, no "
                              "{}); {}, or give --allow-unfinished to merge the files given as they are",
                              file.shown(), *entries, specs::kManifestName, kFinishIt));
  }
}

// A split named as a whole (a directory, or a prefix): its manifest and
// every file it lists, in its order.
MergeSources split_sources(const store::Member& split) {
  const store::Store& place = *split.store;
  const std::string shown = place.shown();
  const Source manifest = place.source(split.name);
  std::optional<specs::Manifest> found = manifest_in(place, split.name);
  if (!found) {
    refuse_unfinished_directory(manifest, shown);
    throw Error(fmt::format("{}: no manifest (is {} the output of a finished split? merge also takes the files)",
                            manifest.shown(), shown));
  }
  MergeSources out;
  out.manifest = std::move(found);
  out.manifest_path = manifest.name();
  out.read_besides.push_back(manifest);
  for (const auto& f : out.manifest->files) out.files.push_back(place.source(f.name));
  return out;
}

}  // namespace

MergeSources find_sources(const std::vector<Source>& arguments, Unfinished unfinished) {
  std::vector<std::optional<store::Member>> splits;
  for (const auto& in : arguments) {
    splits.push_back(store::open_split(in));
    if (splits.back() && !splits.back()->store->exists()) splits.back().reset();  // a path to nothing: as a file
  }
  if (arguments.size() == 1 && splits[0]) return split_sources(*splits[0]);
  for (std::size_t i = 0; i < arguments.size(); ++i)
    if (splits[i])
      throw usage_error("merge: give one directory (with manifest.json) or microbatch files, not both: " +
                        arguments[i].shown());
  MergeSources out;
  out.files = arguments;
  ManifestCache cache;
  std::vector<std::optional<Listing>> listings;
  for (const auto& file : arguments) listings.push_back(cache.listing(file));
  std::optional<std::string> first_listed;
  for (const auto& l : listings)
    if (l && !first_listed) first_listed = l->manifest_path;
  if (!first_listed) {  // plain files: no manifest knows them
    if (unfinished == Unfinished::Refuse) refuse_unfinished_files(arguments);
    return out;
  }
  out.manifest = cache.at(*first_listed);
  out.manifest_path = *first_listed;
  check_listed(arguments, listings, *out.manifest, out.manifest_path);
  for (std::size_t i = 0; i < arguments.size(); ++i)
    if (listings[i] && listings[i]->manifest_path == *first_listed) {
      out.read_besides.push_back(arguments[i].beside(specs::kManifestName));
      break;
    }
  return out;
}

void refuse_reading(const store::Store& place, const std::string& name, const MergeSources& sources) {
  std::vector<Source> read = sources.files;
  read.insert(read.end(), sources.read_besides.begin(), sources.read_besides.end());
  store::refuse_reading(place, name, read);
}

}  // namespace mb::io::merge
