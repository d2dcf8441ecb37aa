#include "io/split/parts.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/publish/digest.hpp"
#include "io/remote/driver.hpp"
#include "io/remote/listing.hpp"
#include "io/remote/upload.hpp"
#include "specs/emit.hpp"
#include "specs/parse.hpp"

namespace mb::io::split {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
namespace {

constexpr const char* kPartFormat = "microbatch-part";
constexpr int kPartVersion = 1;

// The names the manifest's head lists (every file of the split).
std::vector<std::string> listed_names(const json& head) {
  std::vector<std::string> names;
  for (const auto& f : head.at("files")) names.push_back(f.at("name").get<std::string>());
  return names;
}

// part-K-of-P.json -> P, or 0 when the name is no part record's.
std::uint64_t shards_in_name(const std::string& name) {
  unsigned long long k = 0, p = 0;
  int used = 0;
  if (std::sscanf(name.c_str(), "part-%llu-of-%llu.json%n", &k, &p, &used) != 2 ||
      static_cast<std::size_t>(used) != name.size())
    return 0;
  return p;
}

void remove_file(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);  // false without an error: it is gone already
  if (ec) throw Error(p.string() + ": cannot remove the earlier output: " + ec.message());
}

// Another shard's part record where a shard writes must be of the same split.
void check_other_part(const std::string& where, const std::string& text, const PartRecord& ours,
                      const std::string& shown) {
  PartRecord theirs;
  try {
    theirs = parse_part(text, where);
  } catch (const Error&) {
    return;  // unreadable: finish names it; it is that shard's to rewrite
  }
  if (split_of(theirs) != split_of(ours))
    throw Error(fmt::format("{}: holds {}, a part of another split (other input, spec or options); use another "
                            "output directory",
                            shown, fs::path(where).filename().string()));
}

// What a shard makes of a split output (its final name) where it writes.
enum class Found { Theirs, Finished, Mine, OtherPart };

// The split's outputs: whether each is this shard's (its files and part record) or another's.
std::unordered_map<std::string, bool> outputs_of(const PartRecord& ours) {
  const std::vector<std::string> names = listed_names(ours.head);
  std::unordered_map<std::string, bool> mine{{part_name(ours.shard), true}};
  for (std::uint64_t i = 0; i < names.size(); ++i) mine[names[i]] = i >= ours.range.begin && i < ours.range.end;
  return mine;
}

// Throws for an output of another split; `shown` is where the shard writes.
Found classify(const std::string& name, const std::unordered_map<std::string, bool>& outputs,
               const PartRecord& ours, const std::string& shown) {
  if (name == specs::kManifestName) return Found::Finished;
  if (const auto it = outputs.find(name); it != outputs.end()) return it->second ? Found::Mine : Found::Theirs;
  if (shards_in_name(name) == ours.shard.count) return Found::OtherPart;
  throw Error(fmt::format("{}: holds {}, which is not an output of this split (another split, or other shard "
                          "counts?); use another output directory",
                          shown, name));
}

// Without --force an earlier finished split or this shard's earlier output is refused.
void refuse_earlier(const std::string& name, bool force, const std::string& shown) {
  if (force) return;
  throw Error(fmt::format("{}: holds {} of an earlier run; use --force to replace this shard's output", shown,
                          name == specs::kManifestName ? "a finished split (manifest.json)" : name));
}

std::string read_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot read the part record: {}", path, std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string part_name(const Shard& shard) { return fmt::format("part-{:05}-of-{:05}.json", shard.index, shard.count); }

std::string part_text(const PartRecord& p) {
  auto files = json::array();
  for (const auto& f : p.files) files.push_back({{"name", f.name}, {"size", f.size}, {"xxh3_128", f.digest}});
  json j;
  j["format"] = kPartFormat;
  j["version"] = kPartVersion;
  j["shard"] = p.shard.index;
  j["shards"] = p.shard.count;
  j["first_file"] = p.range.begin;
  j["end_file"] = p.range.end;
  j["file_count"] = p.file_count;
  j["input"] = {{"path", specs::escape_name(p.input)}, {"size", p.input_size}, {"mtime_ns", p.input_mtime_ns},
                {"etag", p.input_etag}};
  j["files"] = files;
  j["manifest_head"] = p.head;  // holds the resolved spec and the split options
  j["manifest_datasets"] = p.datasets;
  j["complete"] = true;  // written last: a record without it was cut short
  return j.dump(2) + "\n";
}

PartRecord parse_part(const std::string& text, const std::string& where) {
  PartRecord p;
  try {
    const json j = json::parse(text);
    if (j.at("format") != kPartFormat) throw Error("not a microbatch part record");
    if (j.at("version") != kPartVersion) throw Error(fmt::format("part record version {} is not supported", j.at("version").dump()));
    if (!j.value("complete", false)) throw Error("the part record is incomplete");
    p.shard = {j.at("shard").get<std::uint64_t>(), j.at("shards").get<std::uint64_t>()};
    p.range = {j.at("first_file").get<std::uint64_t>(), j.at("end_file").get<std::uint64_t>()};
    p.file_count = j.at("file_count").get<std::uint64_t>();
    p.input = specs::unescape_name(j.at("input").at("path").get<std::string>());
    p.input_size = j.at("input").at("size").get<std::uint64_t>();
    p.input_mtime_ns = j.at("input").at("mtime_ns").get<std::int64_t>();
    p.input_etag = j.at("input").at("etag").get<std::string>();
    for (const auto& f : j.at("files"))
      p.files.push_back({f.at("name").get<std::string>(), f.at("size").get<std::uint64_t>(),
                         f.at("xxh3_128").get<std::string>()});
    p.head = j.at("manifest_head");
    p.datasets = j.at("manifest_datasets").get<std::string>();
    if (listed_names(p.head).size() != p.file_count || p.range.begin > p.range.end || p.range.end > p.file_count ||
        p.files.size() != p.range.size())
      throw Error("the part record's file range does not match its files");
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed part record: {}", where, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", where, e.what()));
  }
  return p;
}

PartRecord read_part(const std::string& path) { return parse_part(read_record(path), path); }

std::string split_of(const PartRecord& p) {
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}", p.shard.count, p.input, p.input_size, p.input_mtime_ns,
                     p.input_etag, p.head.dump(), p.datasets);
}

void stat_input(const Source& input, PartRecord& part) {
  if (input.is_remote()) {  // its version, from the request that opening it would make; never its query
    const remote::Version version = remote::describe(input.address());
    part.input = input.shown();
    part.input_size = version.size;
    part.input_mtime_ns = version.modified * 1'000'000'000LL;
    part.input_etag = version.etag;
    return;
  }
  struct stat st {};
  if (::stat(input.name().c_str(), &st) != 0)
    throw Error(fmt::format("{}: cannot stat the input: {}", input.shown(), std::strerror(errno)));
  part.input = input.name();
  part.input_size = static_cast<std::uint64_t>(st.st_size);
  part.input_mtime_ns = st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec;
}

publish::OutputDirectory prepare_shard_dir(const std::string& dir, bool force, const PartRecord& ours) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error(dir + ": the output path exists and is not a directory");
  publish::CreatedDirectories created(dir);
  if (!fs::is_directory(dir, ec)) throw Error(dir + ": the output path exists and is not a directory");
  const std::string lock_name =
      fmt::format("{}.shard-{:05}-of-{:05}", publish::kDirectoryLockName, ours.shard.index, ours.shard.count);
  publish::OutputLock lock((fs::path(dir) / lock_name).string(), dir);
  const auto outputs = outputs_of(ours);
  std::vector<fs::path> remove_first, remove_then;  // manifest; then our part record and files
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!publish::is_split_output(name)) continue;
    if (name.starts_with(".")) {  // a temporary: of a running shard, or left by a killed one
      const auto tmp = name.rfind(".tmp-");
      const auto own = tmp == std::string::npos ? outputs.end() : outputs.find(name.substr(1, tmp - 1));
      if (own != outputs.end() && own->second && force) remove_then.push_back(entry.path());
      continue;
    }
    const Found found = classify(name, outputs, ours, dir);
    if (found == Found::Theirs) continue;
    publish::refuse_unless_regular(entry.path().string());
    if (fs::equivalent(entry.path(), ours.input, ec))
      throw Error(dir + ": the input " + ours.input + " has a split output's name in the output directory; choose "
                  "another output directory");
    if (found == Found::OtherPart) {
      std::string text;
      try {
        text = read_record(entry.path().string());
      } catch (const Error&) {
        continue;  // unreadable: finish names it
      }
      check_other_part(entry.path().string(), text, ours, dir);
      continue;
    }
    refuse_earlier(name, force, dir);
    (found == Found::Finished ? remove_first : remove_then).push_back(entry.path());
  }
  if (ec) throw Error(dir + ": cannot list the output directory: " + ec.message());
  // Our part record before our files: a shard half removed is never taken for finished.
  std::stable_sort(remove_then.begin(), remove_then.end(), [&](const fs::path& a, const fs::path& b) {
    return (a.filename() == part_name(ours.shard)) > (b.filename() == part_name(ours.shard));
  });
  for (const auto& p : remove_first) remove_file(p);
  for (const auto& p : remove_then) remove_file(p);
  return {std::move(created), std::move(lock)};
}

void claim_shard_prefix(const std::string& prefix, bool force, const PartRecord& ours) {
  remote::Client client(remote::settings_from(std::getenv));
  const auto outputs = outputs_of(ours);
  const std::string shown = shown_name(prefix);
  std::vector<std::string> remove_first, remove_then;  // manifest; then our part record and files
  for (const auto& o : remote::list_prefix(client, resolve_listing(prefix, std::getenv))) {
    if (!publish::is_final_output(o.name)) continue;
    const Found found = classify(o.name, outputs, ours, shown);
    if (found == Found::Theirs) continue;
    if (found == Found::OtherPart) {
      if (const auto text = remote::get_text(client, resolve_remote(prefix + o.name, std::getenv)))
        check_other_part(shown_name(prefix + o.name), *text, ours, shown);
      continue;
    }
    refuse_earlier(o.name, force, shown);
    (found == Found::Finished ? remove_first : remove_then).push_back(o.name);
  }
  // Our part record before our files: a shard half removed is never taken for finished.
  std::stable_partition(remove_then.begin(), remove_then.end(),
                        [&](const std::string& name) { return name == part_name(ours.shard); });
  for (const auto* names : {&remove_first, &remove_then})
    for (const auto& name : *names) remote::delete_object(client, resolve_remote(prefix + name, std::getenv));
}

}  // namespace mb::io::split

namespace mb::io::split {
namespace {

// Part K of the place's split, checked against part 0 (`first`).
PartRecord checked_part(const SplitPlace& place, const Shard& shard, const PartRecord* first) {
  const std::string path = place.path(part_name(shard));
  if (!place.outputs.contains(part_name(shard)))
    throw Error(fmt::format("{}: missing: shard {} of {} has not finished (failed, killed or not run yet); run it "
                            "again (split ... --shard {}/{}), then finish",
                            path, shard.index, shard.count, shard.index, shard.count));
  PartRecord p = parse_part(place.read(part_name(shard)), path);
  if (p.shard.index != shard.index || p.shard.count != shard.count)
    throw Error(fmt::format("{}: records shard {} of {}, not {} of {}", path, p.shard.index, p.shard.count,
                            shard.index, shard.count));
  if (first && split_of(p) != split_of(*first))
    throw Error(fmt::format("{}: is a part of another split than {} (other input, input size or time, spec or "
                            "options); rerun this shard with the same command",
                            path, part_name({0, shard.count})));
  if (p.range != share_of(p.file_count, shard.count, shard.index))
    throw Error(fmt::format("{}: records files [{}, {}), not this shard's share", path, p.range.begin, p.range.end));
  const std::vector<std::string> names = listed_names(p.head);
  for (std::uint64_t i = 0; i < p.files.size(); ++i) {
    const specs::FileRecord& f = p.files[i];
    if (f.name != names[p.range.begin + i])
      throw Error(fmt::format("{}: lists {} where the split has {}", path, f.name, names[p.range.begin + i]));
    const auto found = place.outputs.find(f.name);
    if (found == place.outputs.end())
      throw Error(fmt::format("{}: missing (listed in {}); run shard {} again", place.path(f.name), part_name(shard),
                              shard.index));
    if (found->second != f.size)
      throw Error(fmt::format("{}: is {} bytes, {} records {}; run shard {} again", place.path(f.name),
                              found->second, part_name(shard), f.size, shard.index));
  }
  return p;
}

// The shard count of the place's part records (all must agree).
std::uint64_t shard_count(const SplitPlace& place) {
  std::uint64_t count = 0;
  std::string seen;
  for (const auto& [name, size] : place.outputs) {
    if (!name.starts_with("part-") || !name.ends_with(".json")) continue;
    const std::uint64_t p = shards_in_name(name);
    if (p == 0 || (count != 0 && p != count))
      throw Error(fmt::format("{}: is not a part record of the same split as {} (the shard counts differ)",
                              place.path(name), seen));
    count = p;
    seen = name;
  }
  if (count == 0)
    throw Error(fmt::format("{}: holds no part record (part-K-of-P.json); run split --shard K/P into it first",
                            place.shown));
  return count;
}

// Every split output in the place must be one the part records list: a
// stray file (of another split, or a shard run with other counts) would sit
// beside the manifest as if it belonged to it.
void refuse_strays(const SplitPlace& place, const std::vector<specs::FileRecord>& files, std::uint64_t count) {
  std::set<std::string> known{specs::kManifestName};
  for (const auto& f : files) known.insert(f.name);
  for (std::uint64_t k = 0; k < count; ++k) known.insert(part_name({k, count}));
  for (const auto& [name, size] : place.outputs) {
    if (known.contains(name)) continue;
    throw Error(fmt::format("{}: is not listed in any part record of this split (left by another split or "
                            "another shard count?); move it away, then finish",
                            place.path(name)));
  }
}

// A directory's split outputs under their final names (temporaries are a running shard's).
SplitPlace local_place(const std::string& dir) {
  SplitPlace place{.shown = dir, .outputs = {}, .read = {}, .path = {}};
  place.path = [dir](const std::string& name) { return (fs::path(dir) / name).string(); };
  place.read = [path = place.path](const std::string& name) { return read_record(path(name)); };
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!publish::is_final_output(name)) continue;
    std::error_code size_ec;
    const auto size = fs::file_size(entry.path(), size_ec);
    if (!size_ec) place.outputs[name] = size;  // else not there for finish: "missing"
  }
  if (ec) throw Error(dir + ": cannot list the directory: " + ec.message());
  return place;
}

}  // namespace

std::string finished_manifest(const SplitPlace& place) {
  const std::uint64_t count = shard_count(place);
  std::vector<PartRecord> parts;
  for (std::uint64_t k = 0; k < count; ++k)
    parts.push_back(checked_part(place, {k, count}, parts.empty() ? nullptr : &parts[0]));
  std::vector<specs::FileRecord> files;
  for (const auto& p : parts) files.insert(files.end(), p.files.begin(), p.files.end());
  refuse_strays(place, files, count);
  json head = parts[0].head;
  auto listed = json::array();
  for (const auto& f : files) listed.push_back({{"name", f.name}, {"size", f.size}, {"xxh3_128", f.digest}});
  head["files"] = listed;
  head["split_id"] = publish::digest_text(specs::split_identity(head.at("spec"), head.at("options"), files));
  return specs::assemble_manifest(head, parts[0].datasets);
}

namespace {

// An S3 prefix's split outputs, listed; part records read by GET.
SplitPlace remote_place(const std::string& prefix, remote::Client& client) {
  SplitPlace place{.shown = shown_name(prefix), .outputs = {}, .read = {}, .path = {}};
  place.path = [prefix](const std::string& name) { return shown_name(prefix + name); };
  place.read = [prefix, &client](const std::string& name) {
    const auto text = remote::get_text(client, resolve_remote(prefix + name, std::getenv));
    if (!text) throw environment_error(shown_name(prefix + name) + ": gone while finish read the prefix");
    return *text;
  };
  for (const auto& o : remote::list_prefix(client, resolve_listing(prefix, std::getenv)))
    if (publish::is_final_output(o.name)) place.outputs[o.name] = o.size;
  return place;
}

std::string with_slash(std::string prefix) { return prefix.ends_with("/") ? prefix : prefix + "/"; }

// Deletes the split outputs of a listing, part records first: a prefix half
// cleared never holds a complete set of parts without their files.
void delete_outputs(remote::Client& client, const std::string& prefix, const std::vector<remote::Listed>& listed) {
  std::vector<std::string> names;
  for (const auto& o : listed)
    if (publish::is_final_output(o.name) && o.name != specs::kManifestName)
      names.push_back(o.name);
  std::stable_partition(names.begin(), names.end(), [](const std::string& n) { return shards_in_name(n) != 0; });
  for (const auto& name : names) remote::delete_object(client, resolve_remote(prefix + name, std::getenv));
}

}  // namespace

std::string finish_remote_split(const std::string& name) {
  const std::string prefix = with_slash(name);
  remote::Client client(remote::settings_from(std::getenv));
  const SplitPlace place = remote_place(prefix, client);
  const std::string manifest = prefix + specs::kManifestName;
  if (place.outputs.contains(specs::kManifestName))
    throw Error(shown_name(manifest) + ": exists: this split is finished already");
  const std::string text = finished_manifest(place);
  remote::put_text(client, resolve_remote(manifest, std::getenv), text);
  return text;
}

void claim_team_prefix(const std::string& name, bool force) {
  const std::string prefix = with_slash(name);
  remote::Client client(remote::settings_from(std::getenv));
  const auto listed = remote::list_prefix(client, resolve_listing(prefix, std::getenv));
  bool finished = false;
  for (const auto& o : listed) {
    if (!publish::is_final_output(o.name)) continue;
    if (!force)
      throw Error(fmt::format("{}: holds the output of an earlier split ({}); use --force to replace it",
                              shown_name(prefix), o.name));
    finished = finished || o.name == specs::kManifestName;
  }
  if (finished) remote::delete_object(client, resolve_remote(prefix + specs::kManifestName, std::getenv));
  delete_outputs(client, prefix, listed);
}

std::string finish_split(const std::string& dir) {
  if (is_remote(dir)) {
    finish_remote_split(dir);
    return shown_name(with_slash(dir) + specs::kManifestName);
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(dir + ": is not a directory");
  // finish and split both write the manifest: one at a time.
  publish::OutputLock lock((fs::path(dir) / publish::kDirectoryLockName).string(), dir);
  return finish_locked_split(dir);
}

std::string finish_locked_split(const std::string& dir) {
  const std::string manifest = (fs::path(dir) / specs::kManifestName).string();
  const SplitPlace place = local_place(dir);
  if (place.outputs.contains(specs::kManifestName)) throw Error(manifest + ": exists: this split is finished already");
  publish::write_text_atomically(manifest, finished_manifest(place));
  return manifest;
}

void remove_split_outputs(const std::string& dir) {
  if (is_remote(dir)) {
    remote::Client client(remote::settings_from(std::getenv));
    // A manifest PUT whose answer was lost may have landed; the team claimed the prefix, so it is the team's.
    remote::delete_object(client, resolve_remote(with_slash(dir) + specs::kManifestName, std::getenv));
    delete_outputs(client, with_slash(dir), remote::list_prefix(client, resolve_listing(with_slash(dir), std::getenv)));
    return;
  }
  std::vector<fs::path> parts, files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!publish::is_final_output(name) || name == specs::kManifestName) continue;
    (shards_in_name(name) != 0 ? parts : files).push_back(entry.path());
  }
  if (ec) throw Error(dir + ": cannot list the output directory: " + ec.message());
  for (const auto& p : parts) remove_file(p);
  for (const auto& p : files) remove_file(p);
}

void remove_part_records(const std::string& dir, std::uint64_t count) {
  if (is_remote(dir)) {
    remote::Client client(remote::settings_from(std::getenv));
    for (std::uint64_t k = 0; k < count; ++k)
      remote::delete_object(client, resolve_remote(with_slash(dir) + part_name({k, count}), std::getenv));
    return;
  }
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::string path = (fs::path(dir) / part_name({k, count})).string();
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      throw Error(fmt::format("{}: cannot remove ({})", path, std::strerror(errno)));
  }
}

}  // namespace mb::io::split
