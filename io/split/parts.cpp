#include "io/split/parts.hpp"

#include "io/split/resume.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "core/error.hpp"
#include "io/publish/digest.hpp"
#include "io/publish/outputs.hpp"
#include "io/source/input.hpp"
#include "io/store/place.hpp"
#include "specs/emit.hpp"
#include "specs/file_names.hpp"
#include "specs/parse.hpp"

namespace mb::io::split {
using json = nlohmann::ordered_json;
namespace {

constexpr const char* kPartFormat = "microbatch-part";
constexpr int kPartVersion = 2;  // 2: block digests (specs::DigestKind::blocks)
const char* const kDigestKey = specs::digest_key(specs::DigestKind::blocks);

// The names the manifest's head lists (every file of the split).
std::vector<std::string> listed_names(const json& head) {
  std::vector<std::string> names;
  for (const auto& f : head.at("files")) names.push_back(f.at("name").get<std::string>());
  return names;
}

}  // namespace

std::string shard_lock_name(const Shard& shard) { return specs::shard_lock_name(shard.index, shard.count); }

namespace {

// Another shard's part record where a shard writes must be of the same split.
void check_other_part(const store::Store& place, const std::string& name, const PartRecord& ours) {
  std::optional<std::string> text;
  PartRecord theirs;
  try {
    text = place.read_text(name);
    if (!text) return;  // gone meanwhile
    theirs = parse_part(*text, place.shown(name));
  } catch (const Error&) {
    return;  // unreadable: finish names it; it is that shard's to rewrite
  }
  if (split_of(theirs) != split_of(ours))
    throw Error(fmt::format("{}: holds {}, a part of another split (other input, spec or options); use another "
                            "output directory",
                            place.shown(), name));
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
  if (specs::part_record_count(name) == ours.shard.count) return Found::OtherPart;
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

}  // namespace

std::string part_name(const Shard& shard) { return specs::part_record_name(shard.index, shard.count); }

std::string part_text(const PartRecord& p) {
  auto files = json::array();
  for (const auto& f : p.files) files.push_back({{"name", f.name}, {"size", f.size}, {kDigestKey, f.digest}});
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
                         f.at(kDigestKey).get<std::string>()});
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

std::string split_of(const PartRecord& p) {
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}", p.shard.count, p.input, p.input_size, p.input_mtime_ns,
                     p.input_etag, p.head.dump(), p.datasets);
}

void stat_input(const Source& input, PartRecord& part) {
  const source::Version version = source::version(input);
  part.input = input.shown();  // never a URL's query
  part.input_size = version.size;
  part.input_mtime_ns = version.modified_ns;
  part.input_etag = version.etag;
}

std::unique_ptr<store::Claim> claim_shard(store::WritableStore& place, bool force, const PartRecord& ours,
                                          const Source& input) {
  auto claim = place.claim(shard_lock_name(ours.shard));
  const auto outputs = outputs_of(ours);
  std::vector<std::string> remove_first, remove_then;  // manifest; then our part record and files
  for (const auto& entry : place.list()) {
    const std::string& name = entry.name;
    if (!specs::is_split_name(name)) continue;
    if (name.starts_with(".")) {  // a temporary: of a running shard, or left by a killed one
      const std::optional<std::string> of = specs::temporary_of(name);
      const auto own = of ? outputs.find(*of) : outputs.end();
      if (own != outputs.end() && own->second && force) remove_then.push_back(name);
      continue;
    }
    const Found found = classify(name, outputs, ours, place.shown());
    if (found == Found::Theirs) continue;
    if (!entry.regular) publish::refuse_unless_regular(place.shown(name));
    if (place.holds(input, name))
      throw Error(place.shown() + ": the input " + input.shown() + " has a split output's name in the output "
                  "directory; choose another output directory");
    if (found == Found::OtherPart) {
      check_other_part(place, name, ours);
      continue;
    }
    refuse_earlier(name, force, place.shown());
    (found == Found::Finished ? remove_first : remove_then).push_back(name);
  }
  // Our part record before our files: a shard half removed is never taken for finished.
  std::stable_partition(remove_then.begin(), remove_then.end(),
                        [&](const std::string& name) { return name == part_name(ours.shard); });
  for (const auto* names : {&remove_first, &remove_then})
    for (const auto& name : *names) place.remove(name);
  return claim;
}

}  // namespace mb::io::split

namespace mb::io::split {
namespace {

// The split outputs of a place that finish sees, by name: their sizes.
using Outputs = std::map<std::string, std::uint64_t>;

// Part K of the place's split, checked against part 0 (`first`).
PartRecord checked_part(const store::Store& place, const Outputs& outputs, const Shard& shard,
                        const PartRecord* first) {
  const std::string path = place.shown(part_name(shard));
  if (!outputs.contains(part_name(shard)))
    throw Error(fmt::format("{}: missing: shard {} of {} has not finished (failed, killed or not run yet); run it "
                            "again (split ... --shard {}/{}), then finish",
                            path, shard.index, shard.count, shard.index, shard.count));
  const auto text = place.read_text(part_name(shard));
  if (!text) throw environment_error(path + ": gone while finish read the place");
  PartRecord p = parse_part(*text, path);
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
    const auto found = outputs.find(f.name);
    if (found == outputs.end())
      throw Error(fmt::format("{}: missing (listed in {}); run shard {} again", place.shown(f.name),
                              part_name(shard), shard.index));
    if (found->second != f.size)
      throw Error(fmt::format("{}: is {} bytes, {} records {}; run shard {} again", place.shown(f.name),
                              found->second, part_name(shard), f.size, shard.index));
  }
  return p;
}

// The shard count of the place's part records (all must agree).
std::uint64_t shard_count(const store::Store& place, const Outputs& outputs) {
  std::uint64_t count = 0;
  std::string seen;
  for (const auto& [name, size] : outputs) {
    const std::uint64_t p = specs::part_record_count(name);
    if (p == 0) continue;
    if (count != 0 && p != count)
      throw Error(fmt::format("{}: is not a part record of the same split as {} (the shard counts differ)",
                              place.shown(name), seen));
    count = p;
    seen = name;
  }
  if (count == 0)
    throw Error(fmt::format("{}: holds no part record (part-K-of-P.json); run split --shard K/P into it first",
                            place.shown()));
  return count;
}

// Every split output in the place must be one the part records list: a
// stray file (of another split, or a shard run with other counts) would sit
// beside the manifest as if it belonged to it.
void refuse_strays(const store::Store& place, const Outputs& outputs, const std::vector<specs::FileRecord>& files,
                   std::uint64_t count) {
  std::set<std::string> known{specs::kManifestName};
  for (const auto& f : files) known.insert(f.name);
  for (std::uint64_t k = 0; k < count; ++k) known.insert(part_name({k, count}));
  for (const auto& [name, size] : outputs) {
    if (known.contains(name)) continue;
    throw Error(fmt::format("{}: is not listed in any part record of this split (left by another split or "
                            "another shard count?); move it away, then finish",
                            place.shown(name)));
  }
}

// A split's files are regular files: anything else under their names is not there for finish ("missing").
Outputs outputs_in(const store::Store& place) {
  Outputs outputs;
  for (const auto& entry : store::split_outputs(place))
    if (entry.regular) outputs[entry.name] = entry.size;
  return outputs;
}

}  // namespace

std::string finished_manifest(const store::Store& place) {
  const Outputs outputs = outputs_in(place);
  if (outputs.contains(specs::kManifestName))
    throw Error(place.shown(specs::kManifestName) + ": exists: this split is finished already");
  const std::uint64_t count = shard_count(place, outputs);
  std::vector<PartRecord> parts;
  for (std::uint64_t k = 0; k < count; ++k)
    parts.push_back(checked_part(place, outputs, {k, count}, parts.empty() ? nullptr : &parts[0]));
  std::vector<specs::FileRecord> files;
  for (const auto& p : parts) files.insert(files.end(), p.files.begin(), p.files.end());
  refuse_strays(place, outputs, files, count);
  json head = parts[0].head;
  auto listed = json::array();
  for (const auto& f : files) listed.push_back({{"name", f.name}, {"size", f.size}, {kDigestKey, f.digest}});
  head["files"] = listed;
  head["split_id"] = publish::digest_text(specs::split_identity(head.at("spec"), head.at("options"), files));
  return specs::assemble_manifest(head, parts[0].datasets);
}

std::string finish(store::WritableStore& place) {
  place.list();  // a directory that is not there is no split to finish, and claiming it would create it
  // finish and split both write the manifest: one at a time where the place has a lock.
  const auto claim = place.claim(specs::kLockName);
  return finish_claimed(place);
}

std::string finish_claimed(store::WritableStore& place) {
  const std::string text = finished_manifest(place);
  store::commit(place, specs::kManifestName, text);
  std::vector<std::string> names;  // their journal entries, where shards ran with --resume, go now
  for (const auto& f : specs::parse_manifest(text, place.shown(specs::kManifestName)).files) names.push_back(f.name);
  remove_journal(place, names);
  return text;
}

void remove_split_outputs(store::WritableStore& place) {
  // A manifest whose answer was lost may have landed; the run claimed the place, so it is the run's.
  place.remove(specs::kManifestName);
  std::vector<std::string> parts, files;
  for (const auto& entry : store::split_outputs(place)) {
    if (entry.name == specs::kManifestName) continue;
    (specs::part_record_count(entry.name) != 0 ? parts : files).push_back(entry.name);
  }
  // Part records first: a place half cleared never holds a complete set of parts without their files.
  for (const auto* names : {&parts, &files})
    for (const auto& name : *names) place.remove(name);
}

void remove_part_records(store::WritableStore& place, std::uint64_t count) {
  for (std::uint64_t k = 0; k < count; ++k) place.remove(part_name({k, count}));
}

}  // namespace mb::io::split
