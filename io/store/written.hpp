#pragma once
// A run's files in a local directory, each written under a hidden temporary
// name beside its final one (publish::AtomicOutputs): what a directory's
// publication renames into place, and what a prefix's spool uploads (and
// with --keep-local keeps). Destroyed unkept, what was written goes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/publish/outputs.hpp"
#include "io/store/store.hpp"

namespace mb::io::store {

class WrittenFiles {
 public:
  // Registers the temporaries of `plan.mine` in `dir`: removed on any
  // failure, and by io/run/guard on a forced exit.
  WrittenFiles(std::string dir, const PublicationPlan& plan);

  const std::string& directory() const { return dir_; }
  // File `index` under its temporary name ("" for one the run does not
  // write), and under its final name.
  std::string temporary(std::uint64_t index) const;
  std::string final_path(std::uint64_t index) const;
  // The run's temporaries (the index of the first is plan.mine.begin).
  const std::vector<std::string>& temporaries() const { return temps_; }

  // Renames every temporary not yet renamed to its final name (never
  // replacing one); or file `index` alone.
  void publish() { outputs_->publish(); }
  void publish(std::uint64_t index) { outputs_->publish(index - mine_.begin); }
  // File `index` stands under its final name (an earlier run's): never
  // written, renamed or removed.
  void stands(std::uint64_t index) { outputs_->stands(index - mine_.begin); }
  // What is published stays when the run fails (split --resume).
  void keep_published() { outputs_->keep_published(); }
  // The run is complete: what was published stays.
  void keep() { outputs_->keep(); }
  // Removes what was written (or published), at once.
  void discard() { outputs_.reset(); }

 private:
  std::string dir_;
  std::vector<std::string> names_;
  FileRange mine_;
  std::vector<std::string> temps_;
  std::optional<publish::AtomicOutputs> outputs_;
};

}  // namespace mb::io::store
