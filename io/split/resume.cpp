#include "io/split/resume.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.hpp"
#include "io/publish/digest.hpp"
#include "io/publish/outputs.hpp"
#include "io/split/claim.hpp"
#include "specs/journal.hpp"

namespace mb::io::split {
namespace {

// The input's name, size, modification time and version, as a shard's part
// records them.
PartRecord input_identity(const Source& input) {
  PartRecord identity;
  stat_input(input, identity);
  return identity;
}

[[noreturn]] void refuse_other(const store::Store& place, const std::string& what) {
  throw Error(fmt::format("{}: holds {}, not an earlier run of this command (another input, spec or options, or the "
                          "input changed since); --resume continues only the same command: use --force to replace it",
                          place.shown(), what));
}

// The files of `records` whose bytes in `place` no longer have their size
// and digest (changed, truncated, replaced or gone since).
std::vector<std::string> changed_files(const store::Store& place, const std::vector<specs::FileRecord>& records,
                                       unsigned threads) {
  std::vector<Source> sources;
  std::vector<std::string> changed;
  std::vector<const specs::FileRecord*> present;
  for (const auto& r : records) {
    if (place.size(r.name) != r.size) {
      changed.push_back(r.name);
      continue;
    }
    sources.push_back(place.source(r.name));
    present.push_back(&r);
  }
  const auto digests = publish::digest_files(sources, threads);
  for (std::size_t i = 0; i < digests.size(); ++i)
    if (digests[i].size != present[i]->size || digests[i].digest != present[i]->digest)
      changed.push_back(present[i]->name);
  return changed;
}

void refuse_changed(const store::Store& place, const std::vector<std::string>& changed, const std::string& record) {
  if (changed.empty()) return;
  throw Error(fmt::format("{}: holds this command's finished {}, but {} no longer matches it (changed since it was "
                          "written); check it with `microbatch verify`, or use --force to split anew",
                          place.shown(changed.front()), record, changed.front()));
}

std::vector<specs::FileRecord> share(const std::vector<specs::FileRecord>& files, FileRange mine) {
  if (mine.end > files.size()) return files;
  return {files.begin() + static_cast<std::ptrdiff_t>(mine.begin), files.begin() + static_cast<std::ptrdiff_t>(mine.end)};
}

// The same command's finished split, checked: the manifest is this run's
// but for its files' records, the input was not modified after it was
// written, and the run's share of the files still matches it.
Finished check_finished(const store::Store& place, const ResumeRequest& request) {
  const std::string text = place.read_text(specs::kManifestName).value_or("");
  const specs::Manifest found = specs::parse_manifest(text, place.shown(specs::kManifestName));
  // The manifest this run would write with those files' records: the same bytes, or another command's.
  specs::Manifest expected = request.planned;
  expected.files = found.files;
  expected.split_id = publish::digest_text(specs::split_identity(expected));
  if (specs::manifest_text(expected) != text)
    refuse_other(place, "a finished split (" + std::string(specs::kManifestName) + ")");
  // To the second: an object store's times have no finer resolution.
  constexpr std::int64_t kSecond = 1'000'000'000;
  const PartRecord input = input_identity(request.input), manifest = input_identity(place.source(specs::kManifestName));
  if (input.input_mtime_ns / kSecond > manifest.input_mtime_ns / kSecond)
    refuse_other(place, "a finished split older than the input (" + std::string(specs::kManifestName) + ")");
  std::vector<specs::FileRecord> files = share(found.files, request.mine);
  refuse_changed(place, changed_files(place, files, request.threads), "split");
  return {std::move(files), text.size(), true};
}

// A shard's part record of the same command, checked with its files.
Finished check_part(const store::Store& place, const ResumeRequest& request) {
  const std::string name = part_name(request.part->shard);
  const std::string text = place.read_text(name).value_or("");
  const PartRecord found = parse_part(text, place.shown(name));
  if (split_of(found) != split_of(*request.part) || found.range.begin != request.mine.begin ||
      found.range.end != request.mine.end)
    refuse_other(place, "a finished part of a split (" + name + ")");
  refuse_changed(place, changed_files(place, found.files, request.threads), "shard (" + name + ")");
  return {found.files, text.size(), false};
}

// What the journal says of the run's files: the records of those it
// published (still to be checked), and what its entries tell of whose the
// place is: any entry of this run (its files without entries are then
// written again, as are those with damaged ones), another run's, or only
// entries that cannot be read.
struct Journal {
  std::vector<std::optional<specs::FileRecord>> recorded;  // by index of the split
  bool ours = false;
  std::size_t others = 0;   // well-formed entries of another run
  std::size_t damaged = 0;  // torn or garbled entries
};

// Reads the entry of file `index` into `journal`; returns its record, when it is this run's.
std::optional<specs::FileRecord> read_entry(const store::Store& place, const ResumeRequest& request,
                                            std::uint64_t index, Journal& journal) {
  const std::string& file = request.planned.files[index].name;
  const auto text = place.read_text(specs::journal_name(file));
  if (!text) return std::nullopt;  // gone meanwhile (another rank's, taken back)
  const auto run = specs::journal_run(*text, file);
  if (!run) {
    ++journal.damaged;
    return std::nullopt;
  }
  if (*run != request.run) {
    ++journal.others;
    return std::nullopt;
  }
  journal.ours = true;
  return specs::parse_journal(*text, request.run, file);
}

Journal read_journal(const store::Store& place, const ResumeRequest& request, const std::set<std::string>& present) {
  Journal journal;
  journal.recorded.resize(request.planned.files.size());
  for (std::uint64_t i = request.mine.begin; i < request.mine.end; ++i) {
    const std::string& file = request.planned.files[i].name;
    if (!present.contains(specs::journal_name(file))) continue;
    const auto record = read_entry(place, request, i, journal);
    if (present.contains(file)) journal.recorded[i] = record;
  }
  return journal;
}

// Whether the entries of the split's other files (other ranks' or shards')
// hold one of this run's: evidence that the place is this command's, when
// the run's own share holds none (each share publishes on its own).
bool ours_elsewhere(const store::Store& place, const ResumeRequest& request, const std::set<std::string>& present) {
  Journal elsewhere;
  for (std::uint64_t i = 0; i < request.planned.files.size() && !elsewhere.ours; ++i)
    if ((i < request.mine.begin || i >= request.mine.end) &&
        present.contains(specs::journal_name(request.planned.files[i].name)))
      read_entry(place, request, i, elsewhere);
  return elsewhere.ours;
}

// The run's files are there but no entry says they are this run's: another
// command's, or entries that cannot tell.
[[noreturn]] void refuse_unproven(const store::Store& place, const Journal& journal) {
  if (journal.others != 0 || journal.damaged == 0)
    refuse_other(place, "the output of an earlier split, unfinished");
  throw Error(fmt::format("{}: holds the output of an earlier split, unfinished, but its journal entries are damaged "
                          "({}): cannot tell whether it was this command; use --force to replace it",
                          place.shown(), journal.damaged));
}

// Keeps the recorded files whose bytes match their entries; removes every
// other file of the run there and its entry (the file first).
std::vector<std::optional<specs::FileRecord>> keep_matching(store::WritableStore& place, const ResumeRequest& request,
                                                            Journal journal, const std::set<std::string>& present) {
  std::vector<specs::FileRecord> candidates;
  for (const auto& r : journal.recorded)
    if (r) candidates.push_back(*r);
  const auto changed = changed_files(place, candidates, request.threads);
  const std::set<std::string> rewrite(changed.begin(), changed.end());
  for (auto& r : journal.recorded)
    if (r && rewrite.contains(r->name)) {
      spdlog::warn("{}: changed since an earlier run published it: written again", place.shown(r->name));
      r.reset();
    }
  for (std::uint64_t i = request.mine.begin; i < request.mine.end; ++i) {
    if (journal.recorded[i]) continue;
    const std::string& name = request.planned.files[i].name;
    if (present.contains(name)) place.remove(name);
    if (present.contains(specs::journal_name(name))) place.remove(specs::journal_name(name));
  }
  return journal.recorded;
}

// What else is there besides this split's files and journal: part records
// (a whole split removes those of shards of its split; a shard leaves the
// other shards' to finish), or a stranger, refused.
std::vector<std::string> part_records(const store::Store& place, const ResumeRequest& request,
                                      const std::vector<store::Entry>& seen) {
  std::set<std::string> planned;
  for (const auto& f : request.planned.files) planned.insert(f.name);
  std::vector<std::string> parts;
  for (const auto& entry : seen) {
    if (!specs::is_final_split_name(entry.name) && !specs::is_journal_name(entry.name)) continue;
    if (planned.contains(specs::journaled_file(entry.name))) continue;
    const std::uint64_t count = specs::part_record_count(entry.name);
    if (count != 0 && (!request.part || count == request.part->shard.count)) {
      parts.push_back(entry.name);
      continue;
    }
    refuse_other(place, "the output of another split (" + entry.name + ")");
  }
  return parts;
}

// Whether a file name is one of the run's files.
class Mine {
 public:
  explicit Mine(const ResumeRequest& request) : range_(request.mine) {
    for (std::uint64_t i = 0; i < request.planned.files.size(); ++i) index_[request.planned.files[i].name] = i;
  }
  bool operator()(const std::string& name) const {
    const auto it = index_.find(name);
    return it != index_.end() && it->second >= range_.begin && it->second < range_.end;
  }

 private:
  FileRange range_;
  std::map<std::string, std::uint64_t> index_;
};

}  // namespace

std::string run_identity(const Source& input, const std::string& planned_manifest) {
  const PartRecord id = input_identity(input);
  return publish::digest_text(
      fmt::format("{}\n{}\n{}\n{}\n{}", id.input, id.input_size, id.input_mtime_ns, id.input_etag, planned_manifest));
}

Resumed claim_resumed(store::WritableStore& place, const ResumeRequest& request) {
  Resumed out{place.claim(request.part ? shard_lock_name(request.part->shard) : specs::kLockName),
              std::nullopt,
              {}};
  std::vector<store::Entry> seen;
  for (auto& entry : place.list())
    if (specs::is_split_name(entry.name)) seen.push_back(std::move(entry));
  refuse_input_among(place, seen, request.input);
  std::set<std::string> present;
  for (const auto& entry : seen) present.insert(entry.name);
  if (present.contains(specs::kManifestName)) {
    out.finished = check_finished(place, request);
    return out;
  }
  if (request.part && present.contains(part_name(request.part->shard))) {
    out.finished = check_part(place, request);
    return out;
  }
  const std::vector<std::string> parts = part_records(place, request, seen);
  Journal journal = read_journal(place, request, present);
  const Mine mine(request);
  bool earlier = false;  // a file of the run's there, or its journal entry
  for (const auto& e : seen) {
    if (specs::is_final_split_name(e.name) || specs::is_journal_name(e.name))
      earlier = earlier || mine(specs::journaled_file(e.name));
    // A killed shard's temporaries of its files: its lock, now held, tells that no live run writes them.
    if (const auto of = specs::temporary_of(e.name); request.part && of && mine(specs::journaled_file(*of)))
      place.remove(e.name);
  }
  if (earlier && !journal.ours) journal.ours = ours_elsewhere(place, request, present);
  if (earlier && !journal.ours) refuse_unproven(place, journal);
  if (!request.part && !parts.empty() && !journal.ours)
    refuse_other(place, "the part records of a split by shards (" + parts.front() + ")");
  if (!request.part)
    for (const auto& name : parts) place.remove(name);  // rewritten by this run's manifest
  out.kept = keep_matching(place, request, std::move(journal), present);
  return out;
}

void remove_journal(store::WritableStore& place, const std::vector<std::string>& names) {
  try {
    std::set<std::string> entries;
    for (const auto& entry : place.list())
      if (specs::is_journal_name(entry.name)) entries.insert(entry.name);
    for (const auto& name : names)
      if (entries.contains(specs::journal_name(name))) place.remove(specs::journal_name(name));
  } catch (const Error& e) {
    spdlog::warn("{} (journal entries of the finished split are left: harmless, the manifest is there)", e.what());
  }
}

}  // namespace mb::io::split
