#include "io/merge/inputs.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/remote/http.hpp"
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

// Manifests are small; this bounds what a wrong URL can make us fetch.
constexpr std::uint64_t kManifestLimit = 1u << 30;

specs::Manifest read_remote_manifest(const Source& manifest) {
  const std::string text = remote::fetch_text(manifest.address(), remote::settings_from(manifest.address().env), kManifestLimit);
  return specs::parse_manifest(text, manifest.name());
}

// The manifest a remote file would be listed in, if one is there. A
// presigned URL (one with a query) signs that one object: its neighbours
// cannot be asked for, so it is merged as a plain file.
std::optional<specs::Manifest> remote_manifest_beside(const Source& file) {
  if (file.name().find('?') != std::string::npos) return std::nullopt;
  try {
    return read_remote_manifest(file.beside(specs::kManifestName));
  } catch (const remote::Missing&) {
    return std::nullopt;
  }
}

class ManifestCache {
 public:
  std::optional<Listing> listing(const Source& file) {
    const bool remote = file.is_remote();
    const fs::path dir = fs::path(file.name()).parent_path().empty() ? fs::path(".") : fs::path(file.name()).parent_path();
    const std::string path = remote ? file.beside(specs::kManifestName).name() : (dir / specs::kManifestName).string();
    auto it = manifests_.find(path);
    if (it == manifests_.end()) {
      std::error_code ec;
      std::optional<specs::Manifest> m;
      if (remote)
        m = remote_manifest_beside(file);
      else if (fs::exists(path, ec))
        m = specs::read_manifest(dir.string());
      it = manifests_.emplace(path, std::move(m)).first;
    }
    if (!it->second) return std::nullopt;
    const auto& files = it->second->files;
    const std::string name = file.file_name();
    for (std::size_t i = 0; i < files.size(); ++i)
      if (files[i].name == name) return Listing{path, i};
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

}  // namespace

// A split directory named by URL (its manifest's, or the directory's
// ending in "/"): its manifest.
std::optional<Source> remote_manifest(const Source& in) {
  if (!in.is_remote()) return std::nullopt;
  const std::optional<std::string> name = remote_manifest_name(in.name(), specs::kManifestName);
  if (!name) return std::nullopt;
  return *name == in.name() ? in : in.beside(specs::kManifestName);
}

MergeSources find_sources(const std::vector<Source>& arguments, Unfinished unfinished) {
  std::error_code ec;
  const auto is_directory = [&](const Source& in) {
    return remote_manifest(in).has_value() || (!in.is_remote() && fs::is_directory(in.name(), ec));
  };
  const bool from_directory = arguments.size() == 1 && is_directory(arguments[0]);
  for (const auto& in : arguments)
    if (!from_directory && is_directory(in))
      throw usage_error("merge: give one directory (with manifest.json) or microbatch files, not both: " +
                        in.shown());
  MergeSources out;
  if (from_directory && arguments[0].is_remote()) {
    const Source manifest = *remote_manifest(arguments[0]);
    out.manifest_path = manifest.name();
    try {
      out.manifest = read_remote_manifest(manifest);
    } catch (const remote::Missing&) {
      refuse_unfinished_directory(manifest, manifest.shown().substr(0, manifest.shown().rfind('/') + 1));
      throw;
    }
    out.read_besides.push_back(manifest);
    for (const auto& f : out.manifest->files) out.files.push_back(manifest.beside(f.name));
    return out;
  }
  if (from_directory) {
    const fs::path dir(arguments[0].name());
    out.manifest_path = (dir / specs::kManifestName).string();
    if (!fs::exists(out.manifest_path, ec))
      refuse_unfinished_directory(Source::local(out.manifest_path), arguments[0].shown());
    out.manifest = specs::read_manifest(dir.string());
    out.read_besides.push_back(Source::local(out.manifest_path));
    for (const auto& f : out.manifest->files) out.files.push_back(Source::local((dir / f.name).string()));
    return out;
  }
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
