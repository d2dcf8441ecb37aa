#include "io/split/claim.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/error.hpp"
#include "io/publish/outputs.hpp"
#include "io/store/place.hpp"
#include "specs/journal.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {
namespace {

bool is_part_record(const std::string& name) { return specs::part_record_count(name) > 0; }

// How the split in a manifest was asked for: "-n 4", "--micro-batch-size 8 --dp-degree 2".
std::string split_flags(const SplitOptions& o, std::uint64_t microbatches) {
  std::string flags = o.micro_batch_size ? fmt::format("--micro-batch-size {}", *o.micro_batch_size)
                                         : fmt::format("-n {}", o.count.value_or(microbatches));
  if (o.dp.degree > 1) flags += fmt::format(" --dp-degree {}", o.dp.degree);
  if (o.cp_degree > 1) flags += fmt::format(" --cp-degree {}", o.cp_degree);
  return flags;
}

// The finished split a place holds, as its manifest tells it ("manifest.json: a split of b.h5 with -n 2, written
// 2026-12-07T14:51:27Z"), so that the user sees which run --force would replace. The manifest's name alone when
// it cannot be read: the refusal stands either way.
std::string earlier_split(const store::Store& place, const store::Entry& manifest) {
  try {
    const auto text = place.read_text(specs::kManifestName);
    if (!text) return specs::kManifestName;
    const specs::Manifest m = specs::parse_manifest(*text, place.shown(specs::kManifestName));
    return fmt::format("{}: a split of {} with {}{}", specs::kManifestName, m.source,
                       split_flags(m.options, m.microbatches),
                       manifest.modified.empty() ? "" : ", written " + manifest.modified);
  } catch (const Error&) {
    return specs::kManifestName;
  }
}

// A plain split is all or nothing, so the rerun of a killed one removes
// even the files that run had finished: say once that --resume keeps them,
// since the user otherwise learns it only by losing a long run again.
void say_what_resume_keeps(const store::Store& place, std::size_t removed) {
  if (removed == 0) return;
  spdlog::info("{}: removed {} temporary {} a killed split left (a plain split keeps nothing of a run that did "
               "not finish); split --resume would have kept the files it had finished: give --resume where a run "
               "may be killed",
               place.shown(), removed, removed == 1 ? "file" : "files");
}

}  // namespace

void refuse_input_among(const store::Store& place, const std::vector<store::Entry>& earlier, const Source& input) {
  for (const auto& entry : earlier) {
    if (!entry.regular) publish::refuse_unless_regular(place.shown(entry.name));
    if (specs::is_final_split_name(entry.name) && place.holds(input, entry.name))
      throw Error(place.shown() + ": the input " + input.shown() +
                  " has a microbatch file name in the output directory; choose another output directory");
  }
}

Claimed claim_for_team(store::WritableStore& place, const Source& input) {
  Claimed out{place.claim(specs::kLockName), {}};
  std::vector<store::Entry> seen;
  for (auto& entry : place.list())
    if (specs::is_split_name(entry.name)) seen.push_back(std::move(entry));
  refuse_input_among(place, seen, input);
  return out;
}

Claimed claim_split(store::WritableStore& place, bool force, const Source& input, bool keep_files) {
  Claimed out{place.claim(specs::kLockName), {}};
  if (out.claim) say_what_resume_keeps(place, out.claim->removed_temporaries());
  std::vector<store::Entry> seen;  // split outputs, temporaries left by a run still writing among them
  for (auto& entry : place.list())
    if (specs::is_split_name(entry.name)) seen.push_back(std::move(entry));
  refuse_input_among(place, seen, input);
  std::vector<store::Entry> earlier;
  std::vector<std::string> journal;  // a resumable run's entries (split --resume)
  for (auto& entry : seen) {
    if (specs::is_journal_name(entry.name)) journal.push_back(entry.name);
    if (specs::is_final_split_name(entry.name)) earlier.push_back(std::move(entry));
  }
  if (earlier.empty() && journal.empty()) return out;
  const auto manifest = std::find_if(earlier.begin(), earlier.end(),
                                     [](const store::Entry& e) { return e.name == specs::kManifestName; });
  const bool finished = manifest != earlier.end();
  if (!force && !finished && !journal.empty())
    throw Error(place.shown() + ": holds an unfinished split (" + (earlier.empty() ? journal.front() : earlier.front().name) +
                " and its journal); use --resume to continue it or --force to replace it");
  if (!force)
    throw Error(place.shown() + ": holds the output of an earlier split (" +
                (finished ? earlier_split(place, *manifest) : earlier.front().name) + "); use --force to replace it");
  if (finished) place.remove(specs::kManifestName);
  for (const auto& entry : earlier)
    if (is_part_record(entry.name)) place.remove(entry.name);
  for (const auto& entry : earlier) {
    if (entry.name == specs::kManifestName || is_part_record(entry.name)) continue;
    if (keep_files)
      out.earlier.push_back(entry.name);
    else
      place.set_aside(entry.name);  // its bytes go while the new split is written
  }
  for (const auto& name : journal) place.remove(name);
  return out;
}

}  // namespace mb::io::split
