#include "io/split/resume.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "io/publish/digest.hpp"
#include "io/publish/outputs.hpp"
#include "io/split/claim.hpp"
#include "io/split/parts.hpp"
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

// The same command's finished split, checked: the manifest is this run's
// but for its files' records, the input was not modified after it was
// written, and every file still matches it.
std::string check_finished(const store::Store& place, const ResumeRequest& request) {
  const std::string text = place.read_text(specs::kManifestName).value_or("");
  const specs::Manifest found = specs::parse_manifest(text, place.shown(specs::kManifestName));
  // The manifest this run would write with those files' records: the same bytes, or another command's.
  specs::Manifest expected = request.planned;
  expected.files = found.files;
  expected.split_id = publish::digest_text(specs::split_identity(expected));
  if (specs::manifest_text(expected) != text)
    refuse_other(place, "a finished split (" + std::string(specs::kManifestName) + ")");
  const PartRecord input = input_identity(request.input), manifest = input_identity(place.source(specs::kManifestName));
  if (input.input_mtime_ns > manifest.input_mtime_ns)
    refuse_other(place, "a finished split older than the input (" + std::string(specs::kManifestName) + ")");
  const auto changed = changed_files(place, found.files, request.threads);
  if (!changed.empty())
    throw Error(fmt::format("{}: holds this command's finished split, but {} no longer matches its manifest (changed "
                            "since it was written); check it with `microbatch verify`, or use --force to split anew",
                            place.shown(changed.front()), changed.front()));
  return text;
}

// What the journal says of each file of the split: the records of the
// files it published (still to be checked), and whether any entry is the
// run's at all.
struct Journal {
  std::vector<std::optional<specs::FileRecord>> recorded;
  bool ours = false;
};

Journal read_journal(const store::Store& place, const ResumeRequest& request, const std::set<std::string>& present) {
  Journal journal;
  for (const auto& f : request.planned.files) {
    std::optional<specs::FileRecord> record;
    if (present.contains(specs::journal_name(f.name)))
      if (const auto text = place.read_text(specs::journal_name(f.name)))
        record = specs::parse_journal(*text, request.run, f.name);
    journal.ours = journal.ours || record.has_value();
    journal.recorded.push_back(present.contains(f.name) ? record : std::nullopt);
  }
  return journal;
}

// Keeps the recorded files whose bytes match their entries; removes every
// other file of the split and entry there (a file first, then its entry).
std::vector<std::optional<specs::FileRecord>> keep_matching(store::Store& place, const ResumeRequest& request,
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
  for (std::size_t i = 0; i < journal.recorded.size(); ++i) {
    if (journal.recorded[i]) continue;
    const std::string& name = request.planned.files[i].name;
    if (present.contains(name)) place.remove(name);
    if (present.contains(specs::journal_name(name))) place.remove(specs::journal_name(name));
  }
  return journal.recorded;
}

}  // namespace

std::string run_identity(const Source& input, const std::string& planned_manifest) {
  const PartRecord id = input_identity(input);
  return publish::digest_text(
      fmt::format("{}\n{}\n{}\n{}\n{}", id.input, id.input_size, id.input_mtime_ns, id.input_etag, planned_manifest));
}

Resumed claim_resumed(store::Store& place, const ResumeRequest& request) {
  Resumed out{place.claim(publish::kDirectoryLockName), std::nullopt, {}};
  std::vector<store::Entry> seen;
  for (auto& entry : place.list())
    if (publish::is_split_output(entry.name)) seen.push_back(std::move(entry));
  refuse_input_among(place, seen, request.input);
  std::set<std::string> present;
  for (const auto& entry : seen) present.insert(entry.name);
  if (present.contains(specs::kManifestName)) {
    out.finished = check_finished(place, request);
    return out;
  }
  std::set<std::string> planned;
  for (const auto& f : request.planned.files) planned.insert(f.name);
  const std::string* stranger = nullptr;  // a final output that is no file of this split
  for (const auto& entry : seen) {
    const bool entry_of = specs::is_journal_name(entry.name);  // .NAME.journal: NAME's
    const std::string file = entry_of ? entry.name.substr(1, entry.name.size() - 1 - std::string(".journal").size()) : entry.name;
    if ((entry_of || publish::is_final_output(entry.name)) && !planned.contains(file)) stranger = &entry.name;
  }
  Journal journal = read_journal(place, request, present);
  const bool earlier = std::any_of(seen.begin(), seen.end(), [](const store::Entry& e) {
    return publish::is_final_output(e.name) || specs::is_journal_name(e.name);
  });
  if (stranger) refuse_other(place, "the output of another split (" + *stranger + ")");
  if (earlier && !journal.ours) refuse_other(place, "the output of an earlier split, unfinished");
  out.kept = keep_matching(place, request, std::move(journal), present);
  return out;
}

}  // namespace mb::io::split
