#include "io/merge/verified.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "core/error.hpp"
#include "io/merge/steps.hpp"
#include "io/source/input.hpp"

namespace mb::io::merge {
namespace {

void check(const MergeJob& job, std::size_t k, const publish::FileDigest& found, bool digest) {
  const Source& file = job.inputs[k].source;
  const specs::FileRecord& expected = job.manifest->files.at(k);
  if (found.size != expected.size)
    throw Error(fmt::format("{}: {} bytes, but the manifest of its split says {}: the file was changed or replaced "
                            "after the split",
                            file.shown(), found.size, expected.size));
  if (digest && found.digest != expected.digest)
    throw Error(fmt::format("{}: its content digest differs from the manifest's: the file was changed or replaced "
                            "after the split",
                            file.shown()));
}

bool hashed_as_merged(const MergeJob& job) {
  return job.verify && !job.team && std::all_of(job.inputs.begin(), job.inputs.end(), [](const MergeInput& in) {
           return source::local_path(in.source).has_value();
         });
}

}  // namespace

VerifiedInputs::VerifiedInputs(const MergeJob& job) : job_(job), done_(job.inputs.size(), true) {
  if (!job.manifest) return;
  if (hashed_as_merged(job)) {
    hasher_.emplace();
    for (std::size_t k = 0; k < job.inputs.size(); ++k) {
      check(job, k, {source::size(job.inputs[k].source), {}}, false);  // a wrong size fails before any work
      hasher_->add(job.inputs[k].source, job.manifest->digests);
      done_[k] = false;
    }
    return;
  }
  const std::size_t rank = job.team ? job.team->rank : 0, size = job.team ? job.team->size : 1;
  std::vector<Source> files;
  std::vector<std::size_t> index;
  for (std::size_t k = rank; k < job.inputs.size(); k += size) {
    files.push_back(job.inputs[k].source);
    index.push_back(k);
  }
  std::vector<publish::FileDigest> found;
  if (job.verify)
    found = publish::digest_files(files, std::thread::hardware_concurrency(), job.manifest->digests);
  else
    for (const auto& file : files) found.push_back({source::size(file), {}});
  for (std::size_t j = 0; j < files.size(); ++j) check(job, index[j], found[j], job.verify);
}

void VerifiedInputs::ready(std::size_t k) {
  if (done_.at(k)) return;
  check(job_, k, hasher_->get(k), true);
  done_[k] = true;
}

const Source& Context::verified_source() const {
  if (verified) verified->ready(input);
  return source();
}

}  // namespace mb::io::merge
