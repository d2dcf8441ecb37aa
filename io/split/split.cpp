#include "io/split/split.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "core/units.hpp"
#include "io/publish/digest.hpp"
#include "io/publish/uploader.hpp"
#include "io/publish/outputs.hpp"
#include "io/split/claim.hpp"
#include "io/split/files.hpp"
#include "io/split/parts.hpp"
#include "io/split/upload.hpp"
#include "io/split/writer.hpp"
#include "io/store/local.hpp"
#include "io/store/place.hpp"
#include "specs/emit.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {
namespace fs = std::filesystem;
namespace {

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

// Before any work: the output place claimed (an earlier split there, the
// credentials, the bucket). The names of an earlier split's files kept
// until the new manifest is up (--force onto a prefix), for a run of the
// whole split.
std::vector<std::string> claim_place(const SplitJob& job, const PartRecord& part) {
  if (!job.remote || job.remote->claimed) return {};
  if (job.shard) {
    (void)claim_shard(*job.place, job.force, part, job.input);  // a prefix's claim holds nothing
    return {};
  }
  return claim_split(*job.place, job.force, job.input, true).earlier;
}

// Where the files are written, claimed for the run: the place itself, or a
// run onto a prefix's spool. Held until the manifest (part record) is
// written: a second split (of this shard) into a directory fails at once,
// and a directory the claim creates is removed again if the split fails.
std::unique_ptr<store::Claim> claim_written(const SplitJob& job, const PartRecord& part, store::Store& written) {
  if (job.shard) return claim_shard(written, job.force, part, job.input);
  return claim_split(written, job.force, job.input, false).claim;
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
  const std::vector<std::string> earlier = claim_place(job, part);
  const std::unique_ptr<store::Store> spool = job.remote ? store::local_directory(job.output_dir) : nullptr;
  const std::unique_ptr<store::Claim> directory = claim_written(job, part, spool ? *spool : *job.place);
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
    if (job.remote->keep_local) directory->keep();
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
    store::commit(*job.place, part_name(*job.shard), part_text(part));
  } else {
    store::commit(*job.place, specs::kManifestName, specs::manifest_text(final_manifest(planned, records)));
  }
  outputs.keep();
  directory->keep();
  return {records, meter.total()};
}

}  // namespace mb::io::split
