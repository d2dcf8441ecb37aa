#include "io/split/split.hpp"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <thread>

#include "core/units.hpp"
#include "io/publish/digest.hpp"
#include "io/publish/uploader.hpp"
#include "io/tree/input.hpp"
#include "io/publish/outputs.hpp"
#include "io/split/clone.hpp"
#include "io/split/parts.hpp"
#include "io/split/upload.hpp"
#include "io/split/writer.hpp"
#include "io/run/workers.hpp"
#include "specs/emit.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {
namespace fs = std::filesystem;
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

// The output files, by final and temporary name.
struct OutputFiles {
  std::vector<std::string> names;   // as the manifest lists them
  std::vector<std::string> finals;  // paths
  std::vector<std::string> temps;
};

specs::Manifest make_manifest(const SplitJob& job, const tree::Prepared& prepared,
                              const std::vector<specs::FileRecord>& files) {
  const SplitPlan& plan = *prepared.plan;
  specs::Manifest m;
  m.tool_version = job.tool_version;
  m.source = job.input.shown();  // a presigned URL's query is a credential
  m.spec = specs::resolved_spec_json(prepared.tree, *prepared.resolution);
  m.options = job.options;
  m.microbatches = plan.count;
  m.files = files;
  m.sequences = plan.sequences;
  m.dropped_rows = plan.dropped;
  for (const auto& [path, rows] : plan.pieces) {
    specs::SplitDatasetRecord record;
    record.axis = prepared.resolution->dataset_rule(path).axis;
    record.rows = rows;
    // The pieces cover the whole axis: packed data shared out among the CP
    // ranks, everything else once per CP rank.
    const bool shared_out = prepared.resolution->dataset_rule(path).mode == LeafRule::Mode::Packed;
    for (std::uint64_t f = 0; f < rows.size(); ++f)
      if (shared_out || plan.grid().cp_rank_of(f) == 0) record.length += rows_in(rows[f]);
    const auto positions = plan.positions.find(path);
    if (positions != plan.positions.end()) {
      record.sequence_axis = prepared.resolution->dataset_rule(path).sequence_axis;
      record.positions = positions->second;
    }
    m.datasets[path] = std::move(record);
  }
  return m;
}

// The files of a plan by name only (size 0, no digest): a manifest's
// placement and names before the files are written.
std::vector<specs::FileRecord> placeholder_records(const SplitPlan& plan, const std::string& extension) {
  std::vector<specs::FileRecord> out;
  for (std::uint64_t i = 0; i < plan.files(); ++i) out.push_back({specs::output_file_name(plan, i, extension), 0, ""});
  return out;
}

// A shard's part record, but for its files' records (known once written).
PartRecord part_of(const SplitJob& job, const specs::Manifest& planned, const FileRange& mine) {
  PartRecord part;
  part.shard = *job.shard;
  part.range = mine;
  part.file_count = planned.files.size();
  stat_input(job.input, part);
  part.head = specs::manifest_head(planned);
  part.datasets = specs::manifest_datasets_text(planned);
  return part;
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
  h5::Id input = tree::open_input(job.input, h5::Cache::Keep);
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

// The output files in the output directory, this run's (`mine`) registered
// under temporary names.
OutputFiles register_outputs(const SplitJob& job, const specs::Manifest& planned, FileRange mine,
                             publish::AtomicOutputs& outputs) {
  OutputFiles files;
  for (std::uint64_t i = 0; i < planned.files.size(); ++i) {
    files.names.push_back(planned.files[i].name);
    files.finals.push_back((fs::path(job.output_dir) / files.names.back()).string());
    files.temps.push_back(i >= mine.begin && i < mine.end ? outputs.add(files.finals.back()) : "");
  }
  return files;
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
// thread once it is closed, while the next one is written.
std::vector<specs::FileRecord> write_hashed(const SplitJob& job, const tree::Prepared& prepared,
                                            const OutputFiles& files, FileRange range, run::ByteMeter& meter) {
  publish::Hasher hasher;  // no fork from here on: run_workers forks none for one worker
  std::vector<std::uint64_t> order;  // the plan index of each file hashed, in the order they were closed
  const Closed closed = [&](std::uint64_t i) {
    order.push_back(i);
    hasher.add(Source::local(files.temps[i], files.finals[i]));
  };
  const Writing writing{files, files_per_walk(prepared, range), closed};
  run::run_workers(
      1,
      [&](std::uint64_t) {
        meter.use_slot(0);
        write_files(job, prepared, writing, range.begin, range.end);
      },
      job.stall_seconds, [&] { meter.show(); });
  if (order.size() != range.size()) throw std::logic_error("split: a file was written but not closed");
  std::vector<specs::FileRecord> records(range.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    const publish::FileDigest digest = hasher.get(k);
    records[order[k] - range.begin] = {files.names[order[k]], digest.size, digest.digest};
  }
  return records;
}

// Writes files `range` of `files` and returns their records. On `workers`
// processes, worker w of W writes share_of(range, W, w) (this process is
// worker 0), and the files are hashed once all are written; one process
// hashes each file while it writes the next.
std::vector<specs::FileRecord> write_range(const SplitJob& job, const tree::Prepared& prepared,
                                           const OutputFiles& files, FileRange range, run::ByteMeter& meter) {
  const std::uint64_t workers = std::max<std::uint64_t>(1, std::min<std::uint64_t>(job.workers, range.size()));
  SplitJob metered = job;
  if (job.progress) metered.policy.meter = &meter;
  if (workers == 1) return write_hashed(metered, prepared, files, range, meter);
  run::run_workers(
      workers,
      [&](std::uint64_t w) {
        meter.use_slot(w);
        const FileRange share = share_of(range, workers, w);
        write_files(metered, prepared, {files, open_outputs(), {}}, share.begin, share.end);
      },
      job.stall_seconds, [&] { meter.show(); });
  return digest_range(files, range);
}

specs::Manifest final_manifest(specs::Manifest planned, std::vector<specs::FileRecord> records) {
  planned.files = std::move(records);
  planned.split_id = publish::digest_text(specs::split_identity(planned));
  return planned;
}

// Files are written a round at a time and uploaded while the next round is
// written; the spool holds at most two rounds.
std::uint64_t round_size(const SplitJob& job) {
  return std::max<std::uint64_t>({job.workers, 2ull * job.remote->uploads, 1});
}

// What a run onto a prefix uploads: its share of the files and, once every
// one is confirmed, the object that commits them: the manifest, or a
// shard's part record.
struct Upload {
  const OutputFiles& files;
  FileRange mine;
  std::string last;                                                       // its name
  std::function<std::string(const std::vector<specs::FileRecord>&)> text;  // its text, from the files' records
};

// Writes the files a round at a time, each round uploaded while the next is written; then the last object.
std::vector<specs::FileRecord> upload_rounds(const SplitJob& job, const tree::Prepared& prepared, const Upload& up,
                                             publish::Uploader& uploads, run::ByteMeter& meter) {
  const std::uint64_t round = round_size(job);
  std::vector<specs::FileRecord> records;
  for (std::uint64_t begin = up.mine.begin; begin < up.mine.end; begin += round) {
    uploads.wait_for(round);
    const FileRange range{begin, std::min(begin + round, up.mine.end)};
    const auto done = write_range(job, prepared, up.files, range, meter);
    records.insert(records.end(), done.begin(), done.end());
    for (std::uint64_t i = range.begin; i < range.end; ++i) uploads.upload(i);
    spdlog::debug("split: {} of {} files written, {} uploaded ({})", range.end - up.mine.begin, up.mine.size(),
                  uploads.confirmed(), byte_text(static_cast<double>(uploads.uploaded_bytes())));
  }
  if (job.before_publish) job.before_publish();
  uploads.commit(up.text(records));
  spdlog::debug("split: {} files uploaded to {} ({})", up.mine.size(), shown_name(job.remote->prefix),
                byte_text(static_cast<double>(uploads.uploaded_bytes())));
  return records;
}

// split -o s3://: rounds of files written, digested and handed to the
// uploads; the last object uploaded once all are confirmed.
std::vector<specs::FileRecord> write_and_upload(const SplitJob& job, const tree::Prepared& prepared, const Upload& up,
                                                const std::vector<std::string>& earlier, run::ByteMeter& meter) {
  publish::UploadPlan plan =
      upload_plan(*job.remote, {up.files.names, up.files.temps, up.last, job.output_dir}, earlier);
  plan.confirmed = [&meter](std::uint64_t bytes) { meter.uploaded(bytes); };
  meter.uploaded(0);
  publish::Uploader uploads(std::move(plan));
  try {
    return upload_rounds(job, prepared, up, uploads, meter);
  } catch (const Error& e) {
    // One line: the failure, and what of it stayed under the prefix.
    const std::string left = uploads.abandon();
    if (left.empty()) throw;
    throw Error(e.what() + left, e.kind(), e.where());
  }
}

// Before any work: an earlier split under the prefix, the credentials, the
// bucket. The names of an earlier split's files (--force), for a run of
// the whole split.
std::vector<std::string> claim(const SplitJob& job, const PartRecord& part) {
  if (!job.remote || job.remote->claimed) return {};
  if (!job.shard) return claim_prefix(*job.remote, job.force);
  claim_shard_prefix(job.remote->prefix, job.force, part);
  return {};
}

// A run onto a prefix: uploads its files and the last object, and with
// --keep-local keeps them, the last object too, in that directory.
std::vector<specs::FileRecord> to_prefix(const SplitJob& job, const tree::Prepared& prepared, const Upload& up,
                                         const std::vector<std::string>& earlier, run::ByteMeter& meter,
                                         publish::AtomicOutputs& outputs) {
  const auto records = write_and_upload(job, prepared, up, earlier, meter);
  if (job.remote->keep_local) {
    outputs.publish();
    publish::write_text_atomically((fs::path(job.output_dir) / up.last).string(), up.text(records));
    outputs.keep();
  }
  return records;
}

}  // namespace

SplitResult execute(const SplitJob& job, const tree::Prepared& prepared) {
  const SplitPlan& plan = *prepared.plan;
  // This run's files: all, or its shard's share (the partition -j uses too).
  const FileRange mine = job.shard ? share_of(plan.files(), job.shard->count, job.shard->index) : FileRange{0, plan.files()};
  const std::string extension = specs::piece_extension(job.input.file_name());  // x.nc -> microbatch-00000.nc
  const specs::Manifest planned = make_manifest(job, prepared, placeholder_records(plan, extension));
  PartRecord part;
  if (job.shard) part = part_of(job, planned, mine);
  const std::vector<std::string> earlier = claim(job, part);
  // Held until the manifest (part record) is written: a second split (of this
  // shard) into the directory fails at once. A directory it creates is
  // removed again if the split fails.
  publish::OutputDirectory directory = job.shard ? prepare_shard_dir(job.output_dir, job.force, part)
                                        : publish::prepare_output_dir(job.output_dir, job.force, job.input.name());
  // Every output is registered (and so removed on failure) before any worker starts.
  publish::AtomicOutputs outputs;
  const OutputFiles files = register_outputs(job, planned, mine, outputs);
  // Bytes written, counted by every worker in its slot and shown by this process.
  const std::uint64_t workers = std::max<std::uint64_t>(1, std::min<std::uint64_t>(job.workers, mine.size()));
  run::ByteMeter meter(split_bytes(prepared.tree, *prepared.resolution, plan, mine), job.progress, workers);
  if (job.remote) {
    const Upload up{files, mine, job.shard ? part_name(*job.shard) : std::string(specs::kManifestName),
                    [&](const std::vector<specs::FileRecord>& records) {
                      if (!job.shard) return specs::manifest_text(final_manifest(planned, records));
                      PartRecord done = part;
                      done.files = records;
                      return part_text(done);
                    }};
    const auto records = to_prefix(job, prepared, up, earlier, meter, outputs);
    if (job.remote->keep_local) directory.keep();
    return {records, meter.total(), up.text(records).size()};
  }
  const std::vector<specs::FileRecord> records = write_range(job, prepared, files, mine, meter);
  if (!job.shard)
    publish::check_directory_unchanged(job.output_dir, {files.temps.begin() + static_cast<std::ptrdiff_t>(mine.begin),
                                                        files.temps.begin() + static_cast<std::ptrdiff_t>(mine.end)});
  if (job.before_publish) job.before_publish();
  outputs.publish();
  if (job.shard) {
    part.files = records;
    publish::write_text_atomically((fs::path(job.output_dir) / part_name(*job.shard)).string(), part_text(part));
  } else {
    publish::write_text_atomically((fs::path(job.output_dir) / specs::kManifestName).string(),
                                   specs::manifest_text(final_manifest(planned, records)));
  }
  outputs.keep();
  directory.keep();
  return {records, meter.total()};
}

}  // namespace mb::io::split
