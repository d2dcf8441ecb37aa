#pragma once
// Outputs: where a job may write, and how its results appear. Atomic outputs: every output is written under a hidden temporary name in
// its final directory and renamed into place only when the whole job is
// complete. Until then nothing under a final name can pass for finished
// output; on an error what was written is removed (and io/run/guard removes the
// temporaries on signals, crashes and stalls).
//
// Concurrent runs: publishing never replaces a name that appeared while the
// job ran (nor, for merge --force, a file other than the one it was asked
// to replace), and split holds an exclusive lock on its output directory
// for the whole run; of two runs onto one output, one wins and the other
// fails, and nothing mixes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/source.hpp"
#include "io/run/identity.hpp"
#include "io/run/fd.hpp"

namespace mb::io::publish {

class AtomicOutputs {
 public:
  AtomicOutputs() = default;
  AtomicOutputs(const AtomicOutputs&) = delete;
  AtomicOutputs& operator=(const AtomicOutputs&) = delete;
  ~AtomicOutputs();

  // Registers an output; returns the temporary path to write it under.
  // Without `replaces`, nothing may stand under the final name when it is
  // published (a file that appeared meanwhile is an error, never replaced);
  // with it, the file there must still be the one the job found when it
  // started (merge --force).
  std::string add(const std::string& final_path, std::optional<run::FileIdentity> replaces = std::nullopt);

  // Renames every temporary not yet published into place, in the order
  // added, unless a stop signal came (then it throws run::Interrupted's
  // error) or a watched input changed (io/run/identity.hpp). After this the
  // outputs still disappear on destruction unless keep() is called.
  void publish();
  // The same for output `k` (counted from 0 in the order added) alone.
  void publish(std::size_t k);
  // Output `k` stands under its final name already (an earlier run's,
  // kept by split --resume): it is neither written nor renamed.
  void stands(std::size_t k);
  // What is published stays even when the job fails (split --resume: a
  // rerun keeps it); what is not is removed.
  void keep_published() { keep_published_ = true; }

  // The job is complete: leave the published outputs alone.
  void keep() { kept_ = true; }

 private:
  struct Entry {
    std::string temp;
    std::string final_path;
    std::optional<run::FileIdentity> replaces;
    bool published = false;
    bool kept = false;  // an earlier run's, never removed
  };
  std::vector<Entry> entries_;
  bool kept_ = false;
  bool keep_published_ = false;
};

// A file a job writes for itself only (a team merge's scratch file): it
// must not exist yet, and is removed when this goes out of scope (and by
// io/run/guard on a forced exit).
class ScratchFile {
 public:
  explicit ScratchFile(std::string path);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// An exclusive lock held for a whole run: flock(2) on a lock file, which is
// removed when the lock is released (and by io/run/guard on a forced exit; a
// SIGKILL leaves it, harmless: a lock file nobody holds locks again). A
// second run that finds it held fails at once, naming the output.
class OutputLock {
 public:
  OutputLock() = default;
  // Locks `lock_path` (created if missing); `output` is what messages name.
  OutputLock(const std::string& lock_path, const std::string& output);
  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&&) = delete;
  OutputLock(const OutputLock&) = delete;
  ~OutputLock();

 private:
  run::Fd fd_;
  std::string path_;
};

// The directories a run created for its output (the output directory and
// its missing parents), removed again, deepest first, unless the run keeps
// them: a failed or interrupted split leaves no directory it made. A
// directory that existed before is never among them, and one that is not
// empty is not removed (rmdir(2)). Registered with io/run/guard, which removes
// them on a forced exit too.
class CreatedDirectories {
 public:
  CreatedDirectories() = default;
  // Creates `dir` and its missing parents.
  explicit CreatedDirectories(const std::string& dir);
  CreatedDirectories(CreatedDirectories&& other) noexcept;
  CreatedDirectories& operator=(CreatedDirectories&&) = delete;
  CreatedDirectories(const CreatedDirectories&) = delete;
  ~CreatedDirectories();

  void keep() { kept_ = true; }

 private:
  std::vector<std::string> paths_;  // shallowest first
  bool kept_ = false;
};

// Split's output directory for one run. `created` is declared first so that
// it is destroyed last, after the lock has removed its file from inside it.
struct OutputDirectory {
  CreatedDirectories created;
  OutputLock lock;
  // The split is complete: the directories it made stay.
  void keep() { created.keep(); }
};

// Hidden temporary name next to `final_path`: DIR/.NAME.tmp-PID
std::string temporary_name(const std::string& final_path);

// Whether a small file is synced to disk before it is published.
enum class Sync { Yes, No };

// Writes `text` to `path` atomically (temporary file, fsync unless
// Sync::No, publish: the watched inputs checked first); a file that
// appeared at `path` meanwhile is an error, never replaced.
void write_text_atomically(const std::string& path, const std::string& text, Sync sync = Sync::Yes);

// Just before publishing: the directory holds no split output but `ours`
// (the run's temporaries). Anything else appeared while the run wrote.
void check_directory_unchanged(const std::string& dir, const std::vector<std::string>& ours);


// Refuses (mb::Error) anything at `path` but a regular file or nothing.
void refuse_unless_regular(const std::string& path);

// Merge's output file: not a directory, not an existing file unless
// `force`, and never anything but a regular file (a FIFO, a device node, a
// symbolic link are refused even with `force`); that it is none of the
// inputs is checked on every kind of place (io/merge/inputs.hpp). Returns
// the file that `force` replaces, if there is one.
std::optional<run::FileIdentity> prepare_output_file(const std::string& output, bool force);

}  // namespace mb::io::publish
