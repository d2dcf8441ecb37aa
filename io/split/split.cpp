#include "io/split/split.hpp"

#include <algorithm>
#include <thread>

#include "io/publish/digest.hpp"
#include "io/split/claim.hpp"
#include "io/split/files.hpp"
#include "io/split/parts.hpp"
#include "io/split/resume.hpp"
#include "io/split/writer.hpp"
#include "io/store/place.hpp"
#include "specs/emit.hpp"
#include "specs/journal.hpp"
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
      for (const FileRows& file : padded->second) append_rows(record.file_rows.emplace_back(), 0, file.length);
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
store::Claimed claim_run(const SplitJob& job, const PartRecord& part, store::WritableStore& where, bool keep_files) {
  if (job.shard) return {claim_shard(where, job.force, part, job.input), {}};
  return claim_split(where, job.force, job.input, keep_files);
}

// What this run publishes: its share of the files and, once every one is
// published, the manifest or its part record.
store::PublicationPlan publication_plan(const SplitJob& job, const specs::Manifest& planned, FileRange mine,
                                        run::ByteMeter& meter) {
  store::PublicationPlan plan;
  for (const auto& f : planned.files) plan.names.push_back(f.name);
  plan.mine = mine;
  plan.last = job.shard ? part_name(*job.shard) : std::string(specs::kManifestName);
  plan.alone = !job.shard;
  plan.workers = job.workers;
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

// By file index: the records known so far (the kept files', then each
// written file's).
using Records = std::vector<std::optional<specs::FileRecord>>;

// The files of `range` still to write: the runs between the kept ones.
std::vector<FileRange> to_write(FileRange range, const Records& kept) {
  std::vector<FileRange> out;
  for (std::uint64_t i = range.begin; i < range.end;) {
    std::uint64_t end = i;
    while (end < range.end && !kept[end]) ++end;
    if (end > i) out.push_back({i, end});
    i = std::max(end, i + 1);
  }
  return out;
}

// Writes the run's files a round at a time, each round handed on to the
// publication (which may upload it while the next is written), into
// `records`.
void write_rounds(const SplitJob& job, const tree::Prepared& prepared, const OutputFiles& files,
                  store::Publication& publication, run::ByteMeter& meter, Records& records) {
  const Records kept = records;
  // --resume: each file handed on as soon as its record is known, to be published with its journal entry.
  Hashed hashed;
  if (job.resume)
    hashed = [&](std::uint64_t i, const specs::FileRecord& record) {
      records[i] = record;
      publication.complete({i, i + 1});
    };
  for (const FileRange& round : publication.rounds()) {
    publication.make_room();
    for (const FileRange& part : to_write(round, kept)) {
      const auto done = write_range(job, prepared, files, part, meter, hashed);
      for (std::uint64_t i = part.begin; i < part.end; ++i) records[i] = done[i - part.begin];
    }
    publication.complete(round);
  }
}

std::vector<std::string> recorded_names(const std::vector<specs::FileRecord>& files) {
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.name);
  return names;
}

// What --resume found of an earlier run of the same command: a claim held
// for this run and the files kept, or its finished split.
struct Earlier {
  std::unique_ptr<store::Claim> claim;
  std::optional<Finished> finished;
  Records kept;
};

Earlier look_back(const SplitJob& job, const specs::Manifest& planned, FileRange mine, const PartRecord& part,
                  const std::string& run) {
  if (!job.resume) return {nullptr, std::nullopt, Records(planned.files.size())};
  const ResumeRequest request{.input = job.input,
                              .planned = planned,
                              .run = run,
                              .mine = mine,
                              .part = job.shard ? &part : nullptr,
                              .threads = std::thread::hardware_concurrency()};
  Resumed found = claim_resumed(*job.place, request);
  found.kept.resize(planned.files.size());
  return {std::move(found.claim), std::move(found.finished), std::move(found.kept)};
}

// Nothing to write: the records of the run's files, as they stand.
SplitResult finished_result(const Finished& finished) {
  SplitResult result;
  result.files = finished.files;
  result.manifest_bytes = finished.bytes;
  result.kept_files = result.files.size();
  for (const auto& f : result.files) result.kept_bytes += f.size;
  result.finished = finished.manifest;
  return result;
}

// --resume: each file is published with its journal entry as soon as it
// is written.
void resume_publishing(store::PublicationPlan& publishing, const Earlier& earlier, const std::string& run) {
  const Records& records = earlier.kept;
  publishing.journal = [run, &records](std::uint64_t i) { return specs::journal_text(run, *records[i]); };
}

// What the run holds before its publication opens: the place (a resumed
// run's claim, held since it looked back; a team rank's own lock, rank 0
// having claimed the place for the team; else a whole split's claim or a
// shard's), and the directory that keeps a local copy, claimed as a place
// of its own.
store::Claims claim_places(const SplitJob& job, const PartRecord& part, Earlier& earlier) {
  store::WritableStore& place = *job.place;
  store::Claims claims;
  if (job.resume)
    claims.place.claim = std::move(earlier.claim);
  else if (job.claimed)
    claims.place.claim = place.claim(shard_lock_name(*job.shard));
  else
    claims.place = claim_run(job, part, place, place.overwrites());
  if (const std::optional<std::string> copy = place.local_copy()) {
    claims.copy = store::open_writable(*copy, job.input.settings());
    claims.copy_claimed = claim_run(job, part, *claims.copy, false);
  }
  return claims;
}

// The kept files told to the publication, and counted.
SplitResult standing(store::Publication& publication, const Records& records, FileRange mine) {
  SplitResult result;
  for (std::uint64_t i = mine.begin; i < mine.end; ++i)
    if (records[i]) {
      publication.stands(i);
      ++result.kept_files;
      result.kept_bytes += records[i]->size;
    }
  return result;
}

std::uint64_t bytes_to_write(const tree::Prepared& prepared, FileRange mine, const Records& kept) {
  std::uint64_t total = 0;
  for (const FileRange& part : to_write(mine, kept))
    total += split_bytes(prepared.tree, *prepared.resolution, *prepared.plan, part);
  return total;
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
  // --resume: this run's identity, which its journal entries carry.
  const std::string run = job.resume ? run_identity(job.input, specs::manifest_text(planned)) : "";
  Earlier earlier = look_back(job, planned, mine, part, run);
  if (earlier.finished) {
    if (job.before_publish) job.before_publish();  // a team's ranks vote alike, whatever each had left to do
    return finished_result(*earlier.finished);
  }
  Records& records = earlier.kept;  // the kept files' now, every file's once written
  // Bytes written, counted by every worker in its slot and shown by this process.
  const std::uint64_t workers = std::max<std::uint64_t>(1, std::min<std::uint64_t>(job.workers, mine.size()));
  run::ByteMeter meter(bytes_to_write(prepared, mine, records), job.progress, workers);
  // The place claimed, and every output registered (and so removed on
  // failure), before any worker starts. Held until the manifest (part
  // record) is written: a second split (of this shard) into a directory
  // fails at once, and a directory the claim creates is removed again if
  // the split fails.
  store::PublicationPlan publishing = publication_plan(job, planned, mine, meter);
  if (job.resume) resume_publishing(publishing, earlier, run);
  const std::unique_ptr<store::Publication> publication =
      job.place->publication(publishing, claim_places(job, part, earlier));
  SplitResult result = standing(*publication, records, mine);
  const OutputFiles files = output_files(planned, mine, *publication);
  try {
    write_rounds(job, prepared, files, *publication, meter, records);
    for (std::uint64_t i = mine.begin; i < mine.end; ++i) result.files.push_back(*records[i]);
    if (job.before_publish) {
      store::ready_to_commit();  // what this rank read is what stood when it began
      job.before_publish();      // the team's vote
    }
    const std::string text = last_text(job, planned, part, result.files);
    store::ready_to_commit();  // the last look before the commit point
    publication->commit(text);
    // A shard's entries stay until finish writes the manifest.
    if (job.resume && !job.shard) remove_journal(*job.place, recorded_names(result.files));
    result.data_bytes = meter.total();
    result.manifest_bytes = text.size();
    return result;
  } catch (const Error& e) {
    // One line: the failure, and what of the run's files could not be removed.
    const std::string left = publication->abandon();
    if (left.empty()) throw;
    throw Error(e.what() + left, e.kind(), e.where());
  }
}

}  // namespace mb::io::split
