#include "io/split/claim.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "io/publish/outputs.hpp"
#include "io/store/place.hpp"
#include "specs/journal.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {
namespace {

bool is_part_record(const std::string& name) { return name.starts_with("part-"); }

}  // namespace

void refuse_input_among(const store::Store& place, const std::vector<store::Entry>& earlier, const Source& input) {
  for (const auto& entry : earlier) {
    if (!entry.regular) publish::refuse_unless_regular(place.shown(entry.name));
    if (publish::is_final_output(entry.name) && place.holds(input, entry.name))
      throw Error(place.shown() + ": the input " + input.shown() +
                  " has a microbatch file name in the output directory; choose another output directory");
  }
}

Claimed claim_for_team(store::Store& place, const Source& input) {
  Claimed out{place.claim(publish::kDirectoryLockName), {}};
  std::vector<store::Entry> seen;
  for (auto& entry : place.list())
    if (publish::is_split_output(entry.name)) seen.push_back(std::move(entry));
  refuse_input_among(place, seen, input);
  return out;
}

Claimed claim_split(store::Store& place, bool force, const Source& input, bool keep_files) {
  Claimed out{place.claim(publish::kDirectoryLockName), {}};
  std::vector<store::Entry> seen;  // split outputs, temporaries left by a run still writing among them
  for (auto& entry : place.list())
    if (publish::is_split_output(entry.name)) seen.push_back(std::move(entry));
  refuse_input_among(place, seen, input);
  std::vector<store::Entry> earlier;
  std::vector<std::string> journal;  // a resumable run's entries (split --resume)
  for (auto& entry : seen) {
    if (specs::is_journal_name(entry.name)) journal.push_back(entry.name);
    if (publish::is_final_output(entry.name)) earlier.push_back(std::move(entry));
  }
  if (earlier.empty() && journal.empty()) return out;
  const bool finished = std::any_of(earlier.begin(), earlier.end(),
                                    [](const store::Entry& e) { return e.name == specs::kManifestName; });
  if (!force && !finished && !journal.empty())
    throw Error(place.shown() + ": holds an unfinished split (" + (earlier.empty() ? journal.front() : earlier.front().name) +
                " and its journal); use --resume to continue it or --force to replace it");
  if (!force)
    throw Error(place.shown() + ": holds the output of an earlier split (" +
                (finished ? std::string(specs::kManifestName) : earlier.front().name) + "); use --force to replace it");
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
