#include "io/split/split.hpp"

#include <algorithm>

#include "io/publish/digest.hpp"
#include "io/split/claim.hpp"
#include "io/split/files.hpp"
#include "io/split/parts.hpp"
#include "io/split/writer.hpp"
#include "specs/emit.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {
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
    if (const auto padded = plan.padded.find(path); padded != plan.padded.end())
      for (const FileRows& file : padded->second) record.file_rows.push_back({{0, file.length, 1}});
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

specs::Manifest final_manifest(specs::Manifest planned, std::vector<specs::FileRecord> records) {
  planned.files = std::move(records);
  planned.split_id = publish::digest_text(specs::split_identity(planned));
  return planned;
}

// The commit object's text, from the files' records: the manifest, or a
// shard's part record.
std::string last_text(const SplitJob& job, const specs::Manifest& planned, PartRecord part,
                      const std::vector<specs::FileRecord>& records) {
  if (!job.shard) return specs::manifest_text(final_manifest(planned, records));
  part.files = records;
  return part_text(part);
}

// Claims `where` for this run: a whole split's claim, or a shard's.
store::Claimed claim_run(const SplitJob& job, const PartRecord& part, store::Store& where, bool keep_files) {
  if (job.shard) return {claim_shard(where, job.force, part, job.input), {}};
  return claim_split(where, job.force, job.input, keep_files);
}

// What this run publishes: its share of the files and, once every one is
// published, the manifest or its part record.
store::PublicationPlan publication_plan(const SplitJob& job, const specs::Manifest& planned, FileRange mine,
                                        const PartRecord& part, run::ByteMeter& meter) {
  store::PublicationPlan plan;
  for (const auto& f : planned.files) plan.names.push_back(f.name);
  plan.mine = mine;
  plan.last = job.shard ? part_name(*job.shard) : std::string(specs::kManifestName);
  plan.alone = !job.shard;
  plan.claim = [&job, &part](store::Store& where, bool keep_files) { return claim_run(job, part, where, keep_files); };
  plan.claimed = job.claimed;
  plan.workers = job.workers;
  plan.keep_local = job.keep_local;
  plan.uploads = job.uploads;
  plan.uploaded = [&meter](std::uint64_t bytes) { meter.uploaded(bytes); };
  return plan;
}

// The output files where the publication has them written (this run's,
// `mine`, under temporary names).
OutputFiles output_files(const specs::Manifest& planned, FileRange mine, const store::Publication& publication) {
  OutputFiles files;
  for (std::uint64_t i = 0; i < planned.files.size(); ++i) {
    files.names.push_back(planned.files[i].name);
    files.finals.push_back(publication.local_name(i));
    files.temps.push_back(i >= mine.begin && i < mine.end ? publication.path(i) : "");
  }
  return files;
}

// Writes the run's files a round at a time, each round handed on to the
// publication (which may upload it while the next is written).
std::vector<specs::FileRecord> write_rounds(const SplitJob& job, const tree::Prepared& prepared,
                                            const OutputFiles& files, store::Publication& publication,
                                            run::ByteMeter& meter) {
  std::vector<specs::FileRecord> records;
  for (const FileRange& round : publication.rounds()) {
    publication.make_room();
    const auto done = write_range(job, prepared, files, round, meter);
    records.insert(records.end(), done.begin(), done.end());
    publication.complete(round);
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
  // Bytes written, counted by every worker in its slot and shown by this process.
  const std::uint64_t workers = std::max<std::uint64_t>(1, std::min<std::uint64_t>(job.workers, mine.size()));
  run::ByteMeter meter(split_bytes(prepared.tree, *prepared.resolution, plan, mine), job.progress, workers);
  // The place claimed, and every output registered (and so removed on
  // failure), before any worker starts. Held until the manifest (part
  // record) is written: a second split (of this shard) into a directory
  // fails at once, and a directory the claim creates is removed again if
  // the split fails.
  const std::unique_ptr<store::Publication> publication =
      job.place->publication(publication_plan(job, planned, mine, part, meter));
  const OutputFiles files = output_files(planned, mine, *publication);
  try {
    const std::vector<specs::FileRecord> records = write_rounds(job, prepared, files, *publication, meter);
    if (job.before_publish) job.before_publish();
    const std::string text = last_text(job, planned, part, records);
    publication->commit(text);
    return {records, meter.total(), text.size()};
  } catch (const Error& e) {
    // One line: the failure, and what of the run's files could not be removed.
    const std::string left = publication->abandon();
    if (left.empty()) throw;
    throw Error(e.what() + left, e.kind(), e.where());
  }
}

}  // namespace mb::io::split
