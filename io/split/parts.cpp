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

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/publish/digest.hpp"
#include "io/remote/driver.hpp"
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

// Another shard's part record in the directory must be of the same split.
void check_other_part(const fs::path& path, const PartRecord& ours, const std::string& dir) {
  PartRecord theirs;
  try {
    theirs = read_part(path.string());
  } catch (const Error&) {
    return;  // unreadable: finish names it; it is that shard's to rewrite
  }
  if (split_of(theirs) != split_of(ours))
    throw Error(fmt::format("{}: holds {}, a part of another split (other input, spec or options); use another "
                            "output directory",
                            dir, path.filename().string()));
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

PartRecord read_part(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot read the part record: {}", path, std::strerror(errno)));
  PartRecord p;
  try {
    const json j = json::parse(in);
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
    throw Error(fmt::format("{}: malformed part record: {}", path, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
  return p;
}

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
  const std::vector<std::string> names = listed_names(ours.head);
  std::set<std::string> mine{part_name(ours.shard)}, theirs;
  for (std::uint64_t i = 0; i < names.size(); ++i)
    (i >= ours.range.begin && i < ours.range.end ? mine : theirs).insert(names[i]);
  std::vector<fs::path> remove_first, remove_then;  // manifest; then our part record and files
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!publish::is_split_output(name) || theirs.contains(name)) continue;
    if (name.starts_with(".")) {  // a temporary: of a running shard, or left by a killed one
      bool own = false;
      for (const auto& m : mine) own = own || name.starts_with("." + m + ".tmp-");
      if (own && force) remove_then.push_back(entry.path());
      continue;
    }
    publish::refuse_unless_regular(entry.path().string());
    if (fs::equivalent(entry.path(), ours.input, ec))
      throw Error(dir + ": the input " + ours.input + " has a split output's name in the output directory; choose "
                  "another output directory");
    if (name == specs::kManifestName || mine.contains(name)) {
      if (!force)
        throw Error(fmt::format("{}: holds {} of an earlier run; use --force to replace this shard's output", dir,
                                name == specs::kManifestName ? "a finished split (manifest.json)" : name));
      (name == specs::kManifestName ? remove_first : remove_then).push_back(entry.path());
    } else if (shards_in_name(name) == ours.shard.count) {
      check_other_part(entry.path(), ours, dir);
    } else {
      throw Error(fmt::format("{}: holds {}, which is not an output of this split (another split, or other shard "
                              "counts?); use another output directory",
                              dir, name));
    }
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

}  // namespace mb::io::split

namespace mb::io::split {
namespace {

// Part K of the directory's split, checked against part 0 (`first`).
PartRecord checked_part(const std::string& dir, const Shard& shard, const PartRecord* first) {
  const std::string path = (fs::path(dir) / part_name(shard)).string();
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(fmt::format("{}: missing: shard {} of {} has not finished (failed, killed or not run yet); run it "
                            "again (split ... --shard {}/{}), then finish",
                            path, shard.index, shard.count, shard.index, shard.count));
  PartRecord p = read_part(path);
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
    const fs::path file = fs::path(dir) / f.name;
    const auto size = fs::file_size(file, ec);
    if (ec)
      throw Error(fmt::format("{}: missing (listed in {}); run shard {} again", file.string(), part_name(shard),
                              shard.index));
    if (size != f.size)
      throw Error(fmt::format("{}: is {} bytes, {} records {}; run shard {} again", file.string(), size,
                              part_name(shard), f.size, shard.index));
  }
  return p;
}

// The shard count of the directory's part records (all must agree).
std::uint64_t shard_count(const std::string& dir) {
  std::uint64_t count = 0;
  std::string seen;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("part-") || !name.ends_with(".json")) continue;
    const std::uint64_t p = shards_in_name(name);
    if (p == 0 || (count != 0 && p != count))
      throw Error(fmt::format("{}: is not a part record of the same split as {} (the shard counts differ)",
                              (fs::path(dir) / name).string(), seen));
    count = p;
    seen = name;
  }
  if (ec) throw Error(dir + ": cannot list the directory: " + ec.message());
  if (count == 0)
    throw Error(fmt::format("{}: holds no part record (part-K-of-P.json); run split --shard K/P into it first", dir));
  return count;
}

// Every split output in the directory must be one the part records list: a
// stray file (of another split, or a shard run with other counts) would sit
// beside the manifest as if it belonged to it.
void refuse_strays(const std::string& dir, const std::vector<specs::FileRecord>& files, std::uint64_t count) {
  std::set<std::string> known{specs::kManifestName};
  for (const auto& f : files) known.insert(f.name);
  for (std::uint64_t k = 0; k < count; ++k) known.insert(part_name({k, count}));
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".") || !publish::is_split_output(name) || known.contains(name)) continue;
    throw Error(fmt::format("{}: is not listed in any part record of this split (left by another split or "
                            "another shard count?); move it away, then finish",
                            entry.path().string()));
  }
  if (ec) throw Error(dir + ": cannot list the directory: " + ec.message());
}

}  // namespace

std::string finish_split(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(dir + ": is not a directory");
  // finish and split both write the manifest: one at a time.
  publish::OutputLock lock((fs::path(dir) / publish::kDirectoryLockName).string(), dir);
  return finish_locked_split(dir);
}

std::string finish_locked_split(const std::string& dir) {
  std::error_code ec;
  const std::string manifest = (fs::path(dir) / specs::kManifestName).string();
  if (fs::exists(manifest, ec)) throw Error(manifest + ": exists: this split is finished already");
  const std::uint64_t count = shard_count(dir);
  std::vector<PartRecord> parts;
  for (std::uint64_t k = 0; k < count; ++k) parts.push_back(checked_part(dir, {k, count}, parts.empty() ? nullptr : &parts[0]));
  std::vector<specs::FileRecord> files;
  for (const auto& p : parts) files.insert(files.end(), p.files.begin(), p.files.end());
  refuse_strays(dir, files, count);
  json head = parts[0].head;
  auto listed = json::array();
  for (const auto& f : files) listed.push_back({{"name", f.name}, {"size", f.size}, {"xxh3_128", f.digest}});
  head["files"] = listed;
  head["split_id"] = publish::digest_text(specs::split_identity(head.at("spec"), head.at("options"), files));
  publish::write_text_atomically(manifest, specs::assemble_manifest(head, parts[0].datasets));
  return manifest;
}

void remove_split_outputs(const std::string& dir) {
  std::vector<fs::path> parts, files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".") || !publish::is_split_output(name) || name == specs::kManifestName) continue;
    (shards_in_name(name) != 0 ? parts : files).push_back(entry.path());
  }
  if (ec) throw Error(dir + ": cannot list the output directory: " + ec.message());
  for (const auto& p : parts) remove_file(p);
  for (const auto& p : files) remove_file(p);
}

void remove_part_records(const std::string& dir, std::uint64_t count) {
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::string path = (fs::path(dir) / part_name({k, count})).string();
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      throw Error(fmt::format("{}: cannot remove ({})", path, std::strerror(errno)));
  }
}

}  // namespace mb::io::split
