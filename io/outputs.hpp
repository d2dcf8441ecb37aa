#pragma once
// Outputs: where a job may write, and how its results appear. Atomic outputs: every output is written under a hidden temporary name in
// its final directory and renamed into place only when the whole job is
// complete. Until then nothing under a final name can pass for finished
// output; on an error what was written is removed (and io/guard removes the
// temporaries on signals, crashes and stalls).
#include <string>
#include <vector>

namespace mb::io {

class AtomicOutputs {
 public:
  AtomicOutputs() = default;
  AtomicOutputs(const AtomicOutputs&) = delete;
  AtomicOutputs& operator=(const AtomicOutputs&) = delete;
  ~AtomicOutputs();

  // Registers an output; returns the temporary path to write it under.
  std::string add(const std::string& final_path);

  // Renames every temporary into place, in the order added. After this the
  // outputs still disappear on destruction unless keep() is called.
  void publish();

  // The job is complete: leave the published outputs alone.
  void keep() { kept_ = true; }

 private:
  struct Entry {
    std::string temp;
    std::string final_path;
    bool published = false;
  };
  std::vector<Entry> entries_;
  bool kept_ = false;
};

// Hidden temporary name next to `final_path`: DIR/.NAME.tmp-PID
std::string temporary_name(const std::string& final_path);

// Writes `text` to `path` atomically (temporary file, fsync, rename).
void write_text_atomically(const std::string& path, const std::string& text);

// Split's output directory: created if missing. An earlier split in it is
// refused unless `force`; when forced, it is removed, manifest first, so
// that no mix of old and new can pass for finished. The input itself is
// never among what is removed.
void prepare_output_dir(const std::string& dir, bool force, const std::string& input);

// Merge's output file: not a directory, not one of the inputs, and not an
// existing file unless `force`.
void check_output_file(const std::string& output, const std::vector<std::string>& inputs, bool force);

}  // namespace mb::io
