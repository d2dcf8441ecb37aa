#include "io/split/files.hpp"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <thread>

#include "io/publish/digest.hpp"
#include "io/run/workers.hpp"
#include "io/split/clone.hpp"
#include "io/split/writer.hpp"
#include "io/source/input.hpp"

namespace mb::io::split {
namespace {

// At most this many microbatch files are open at once; the input is walked
// once per batch of outputs, so each dataset is opened ceil(N/K) times.
// Fewer under a low descriptor limit, leaving room for the input, the
// directory lock, logging and libhdf5's own files.
std::size_t open_outputs() {
  constexpr std::size_t kMost = 64;
  constexpr rlim_t kReserved = 16;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kMost;
  if (limit.rlim_cur <= kReserved + 1) return 1;
  return std::min<std::size_t>(kMost, limit.rlim_cur - kReserved);
}

// Told of each output file, by plan index, once it is closed and complete.
using Closed = std::function<void(std::uint64_t)>;

// How one process writes its files: how many through libhdf5 at once (the
// input is walked once per batch of them), and whom to tell of each closed.
struct Writing {
  const OutputFiles& files;
  std::size_t at_once;
  Closed closed;  // empty: nobody is told

  void close(std::uint64_t file) const {
    if (closed) closed(file);
  }
};

// Writes output files `which` (plan indices) through libhdf5 under their
// temporary names, a batch of open files at a time.
void write_through_library(const SplitSource& source, const tree::Prepared& prepared, const Writing& writing,
                           const std::vector<std::uint64_t>& which) {
  const OutputFiles& files = writing.files;
  for (std::size_t first = 0; first < which.size(); first += writing.at_once) {
    const auto from = which.begin() + static_cast<std::ptrdiff_t>(first);
    const auto count = static_cast<std::ptrdiff_t>(std::min(writing.at_once, which.size() - first));
    const std::vector<std::uint64_t> batch(from, from + count);
    std::vector<std::string> names;
    std::vector<h5::Id> handles;
    for (const std::uint64_t i : batch) {
      names.push_back(files.finals[i]);
      handles.push_back(h5::create_file(files.temps[i], files.finals[i], {prepared.tree.has_large_attribute()}));
    }
    write_outputs(source, batch, handles, names);
    for (std::size_t i = 0; i < handles.size(); ++i) {
      handles[i].close({names[i], ""});
      writing.close(batch[i]);
    }
  }
}

// The classes of files [begin, end): with clones off, every file its own.
ClonePlan clone_plan(const SplitJob& job, const tree::Prepared& prepared, std::uint64_t begin, std::uint64_t end) {
  if (job.policy.clones) return plan_clones(prepared.tree, *prepared.resolution, *prepared.plan, {begin, end});
  ClonePlan singles;
  for (std::uint64_t f = begin; f < end; ++f) singles.classes.push_back({f, {}});
  return singles;
}

// The copies to make of each class's model, and (in `written`) the files of
// classes whose model's data cannot be written over.
std::vector<CopyTarget> copy_targets(const ModelNotes& notes, const OutputFiles& files,
                                     std::vector<DataOffsets>& offsets, std::vector<std::uint64_t>& written) {
  const ClonePlan& clones = notes.clones();
  std::vector<CopyTarget> targets;
  offsets.resize(clones.classes.size());
  for (std::size_t k = 0; k < clones.classes.size(); ++k) {
    const CloneClass& c = clones.classes[k];
    if (c.copies.empty()) continue;
    auto found = notes.offsets(c.model, files.finals[c.model]);
    if (!found) {
      written.insert(written.end(), c.copies.begin(), c.copies.end());
      continue;
    }
    offsets[k] = std::move(*found);
    for (const std::uint64_t f : c.copies)
      targets.push_back({f, files.temps[f], files.finals[f], files.temps[c.model], &offsets[k]});
  }
  return targets;
}

// Writes output files [begin, end) under their temporary names: each
// class's model through libhdf5, its other files as copies of the model
// (io/split/clone.hpp), or through libhdf5 too where the model's data
// cannot be written over.
void write_files(const SplitJob& job, const tree::Prepared& prepared, const Writing& writing, std::uint64_t begin,
                 std::uint64_t end) {
  const OutputFiles& files = writing.files;
  h5::Id input = source::open(job.input, h5::Cache::Keep);
  const ClonePlan clones = clone_plan(job, prepared, begin, end);
  ModelNotes notes(clones, *prepared.plan, job.policy.buffer_bytes);
  SplitSource source{input.get(), job.input.name(), prepared.tree, *prepared.resolution, *prepared.plan, job.policy, &notes,
                     prepared.held.get()};
  std::vector<std::uint64_t> models;
  for (const auto& c : clones.classes) models.push_back(c.model);
  write_through_library(source, prepared, writing, models);
  source.notes = nullptr;
  std::vector<DataOffsets> offsets;
  std::vector<std::uint64_t> written;
  const std::vector<CopyTarget> targets = copy_targets(notes, files, offsets, written);
  write_through_library(source, prepared, writing, written);
  // As many copies at once as may be open: each batch reads the patched datasets not kept in memory again.
  const std::size_t at_once = open_outputs();
  for (std::size_t first = 0; first < targets.size(); first += at_once) {
    const auto from = targets.begin() + static_cast<std::ptrdiff_t>(first);
    const auto count = static_cast<std::ptrdiff_t>(std::min(at_once, targets.size() - first));
    const std::vector<CopyTarget> batch(from, from + count);
    write_copies(source, notes, batch);
    for (const CopyTarget& target : batch) writing.close(target.file);
  }
  spdlog::debug("split: {} files written through libhdf5, {} as copies of one of them", models.size() + written.size(),
                targets.size());
}

// One walk of the input per file when its datasets are few for their bytes
// (at least 1 MiB a dataset in each file: the walk costs little beside the
// bytes), so that each file is complete, and hashed, while the next one is
// written; else as many files per walk as may be open at once.
std::size_t files_per_walk(const tree::Prepared& prepared, FileRange range) {
  constexpr std::uint64_t kBytesPerDataset = 1u << 20;
  std::uint64_t datasets = 0;
  for_each_node(prepared.tree, [&](const NodeInfo& n) { datasets += !n.is_group() && !n.is_further_name(); });
  const std::uint64_t bytes = split_bytes(prepared.tree, *prepared.resolution, *prepared.plan, range);
  if (datasets > 0 && bytes / datasets / std::max<std::uint64_t>(range.size(), 1) >= kBytesPerDataset) return 1;
  return open_outputs();
}

// The records of files `range`, digested from their temporaries while their pages are still cached.
std::vector<specs::FileRecord> digest_range(const OutputFiles& files, FileRange range) {
  std::vector<Source> written;
  for (std::uint64_t i = range.begin; i < range.end; ++i)
    written.push_back(Source::local(files.temps[i], files.finals[i]));
  const auto digests = publish::digest_files(written, std::thread::hardware_concurrency());
  std::vector<specs::FileRecord> records;
  for (std::size_t i = 0; i < digests.size(); ++i)
    records.push_back({files.names[range.begin + i], digests[i].size, digests[i].digest});
  return records;
}

// This process alone writes files `range`, and hashes each on a second
// thread once it is closed, while the next one is written; `hashed` hears of
// each file as the next one closes (its hash had that file's writing to
// finish in), the last once all are written.
std::vector<specs::FileRecord> write_hashed(const SplitJob& job, const tree::Prepared& prepared,
                                            const OutputFiles& files, FileRange range, run::ByteMeter& meter,
                                            const Hashed& hashed) {
  publish::Hasher hasher;  // no fork from here on: run_workers forks none for one worker
  SplitJob tapped = job;  // the hasher hashes each block a copy completes as it lands, while the copy goes on
  tapped.policy.tap = &hasher;
  std::vector<std::uint64_t> order;  // the plan index of each file hashed, in the order they were closed
  std::vector<specs::FileRecord> records(range.size());
  std::size_t told = 0;  // files whose records are known, in `order`
  const auto record = [&](std::size_t k, const publish::FileDigest& digest) {
    records[order[k] - range.begin] = {files.names[order[k]], digest.size, digest.digest};
    if (hashed) hashed(order[k], records[order[k] - range.begin]);
  };
  const Closed closed = [&](std::uint64_t i) {
    if (hashed)
      for (; told < order.size(); ++told) record(told, hasher.get(told));
    order.push_back(i);
    hasher.add(Source::local(files.temps[i], files.finals[i]));
  };
  const Writing writing{files, files_per_walk(prepared, range), closed};
  run::run_workers(
      1,
      [&](std::uint64_t) {
        meter.use_slot(0);
        write_files(tapped, prepared, writing, range.begin, range.end);
      },
      job.stall_seconds, [&] { meter.show(); });
  if (order.size() != range.size()) throw std::logic_error("split: a file was written but not closed");
  for (; told < order.size(); ++told) record(told, hasher.get(told));
  return records;
}

}  // namespace

// Writes files `range` of `files` and returns their records. On `workers`
// processes, worker w of W writes share_of(range, W, w) (this process is
// worker 0), and the files are hashed once all are written; one process
// hashes each file while it writes the next.
std::vector<specs::FileRecord> write_range(const SplitJob& job, const tree::Prepared& prepared,
                                           const OutputFiles& files, FileRange range, run::ByteMeter& meter,
                                           const Hashed& hashed) {
  const std::uint64_t workers = std::max<std::uint64_t>(1, std::min<std::uint64_t>(job.workers, range.size()));
  SplitJob metered = job;
  if (job.progress) metered.policy.meter = &meter;
  if (workers == 1) return write_hashed(metered, prepared, files, range, meter, hashed);
  run::run_workers(
      workers,
      [&](std::uint64_t w) {
        meter.use_slot(w);
        const FileRange share = share_of(range, workers, w);
        write_files(metered, prepared, {files, open_outputs(), {}}, share.begin, share.end);
      },
      job.stall_seconds, [&] { meter.show(); });
  std::vector<specs::FileRecord> records = digest_range(files, range);
  if (hashed)
    for (std::uint64_t i = range.begin; i < range.end; ++i) hashed(i, records[i - range.begin]);
  return records;
}

}  // namespace mb::io::split
