#pragma once
// The journal of a resumable split (split --resume): beside each file the
// run published under its final name, one small hidden member
// (.microbatch-00003.h5.journal) saying which run published it (the run's
// identity: the input's identity and the manifest the run will write) and
// the file's size and digest. A rerun of the same command keeps a file
// whose journal entry is its own and whose bytes still have that size and
// digest; a damaged entry, or another run's, is never trusted. The entries
// are removed once the manifest is written.
#include <optional>
#include <string>
#include <string_view>

#include "specs/file_names.hpp"  // journal_name, is_journal_name
#include "specs/manifest.hpp"

namespace mb::specs {

inline constexpr const char* kJournalFormat = "microbatch-journal";
inline constexpr int kJournalVersion = 1;

// The entry of file `file`, published by run `run`.
std::string journal_text(std::string_view run, const FileRecord& file);

// The record of the entry `text`, when it is a well-formed entry of run
// `run` for the file named `file`; none when it is damaged or another run's.
std::optional<FileRecord> parse_journal(std::string_view text, std::string_view run, std::string_view file);

// The run that wrote the entry `text` for the file named `file`, when it is
// well formed; none when it is damaged (torn, garbled, or another file's):
// a rerun tells another command's entry from one it cannot read.
std::optional<std::string> journal_run(std::string_view text, std::string_view file);

}  // namespace mb::specs
