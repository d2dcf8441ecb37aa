#pragma once
// The names of a split's own files, one grammar for every reader: its
// outputs (what split writes and the manifest lists), the manifest, a
// shard's part records, split --resume's journal entries, the locks, and
// the hidden names a run writes under first or sets aside. The claim, the
// leftover cleaner, resume, verify and merge all read names through these.
// No JSON.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/context_parallel.hpp"
#include "core/plan.hpp"

namespace mb::specs {

// The extension output files take from their input's file name: its own
// (".nc", ".h5ad", ".hdf5"), so that a glob such as *.nc (xarray's
// open_mfdataset, ncks) finds the pieces; ".h5" for a name without one, or
// with one that is not 1 to 8 letters and digits.
std::string piece_extension(const std::string& input_file_name);

// Name of output file `file` of a plan: microbatch-00003.h5, for the
// per-rank layout rank-00001-microbatch-00003.h5 (files are rank-major),
// and with CP ranks cp-00001-microbatch-00003.h5 or
// rank-00001-cp-00001-microbatch-00003.h5, with `extension` (".h5", ".nc").
// Zero-padded so that a shell glob lists them in order.
std::string output_file_name(const SplitPlan& plan, std::uint64_t file, const std::string& extension);
std::string output_file_name(const FileGrid& grid, FileLayout layout, std::uint64_t file,
                             const std::string& extension);

// Whether `name` is one that output_file_name gives (any grid, any extension
// piece_extension allows).
bool is_output_file_name(std::string_view name);

// A shard's part record, part-00001-of-00004.json; the shard count P a
// name part-K-of-P.json gives, 0 for any other name.
std::string part_record_name(std::uint64_t index, std::uint64_t count);
std::uint64_t part_record_count(std::string_view name);

// split --resume's journal entry of a file: .microbatch-00003.h5.journal;
// whether `name` is one; the file an entry is of (any other name: itself).
std::string journal_name(std::string_view file);
bool is_journal_name(std::string_view name);
std::string journaled_file(std::string_view name);

// What a run writes NAME under until it publishes it: .NAME.tmp-PID; and
// NAME, for such a name (of any process).
std::string temporary_name(std::string_view name, long pid);
std::optional<std::string> temporary_of(std::string_view entry);

// Where split --force sets an earlier split's file aside while it replaces
// it: .NAME.aside-PID; and NAME, for such a name of process `pid`.
std::string aside_name(std::string_view name, long pid);
std::optional<std::string> aside_of(std::string_view entry, long pid);

// A merge rank's scratch file beside the merged file NAME:
// .NAME.rank-R-of-P.scratch; and NAME, for such a name.
std::string scratch_name(std::string_view name, std::uint64_t rank, std::uint64_t size);
std::optional<std::string> scratch_of(std::string_view entry);

// The locks: a split's output directory's, a shard's beside it
// (.microbatch.lock.shard-00001-of-00004), and a merged file's (.NAME.lock).
inline constexpr const char* kLockName = ".microbatch.lock";
std::string shard_lock_name(std::uint64_t index, std::uint64_t count);
bool is_shard_lock_name(std::string_view name);
std::string file_lock_name(std::string_view name);

// A name a split writes under its final name: an output file, the
// manifest, a part record.
bool is_final_split_name(std::string_view name);
// Every name a split writes or removes in its directory: those, their
// journal entries, and the hidden names of either while written (any
// process) or set aside (any process).
bool is_split_name(std::string_view name);

}  // namespace mb::specs
