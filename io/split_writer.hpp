#pragma once
// Executes a split plan: one HDF5 file per microbatch plus manifest.json.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/plan.hpp"
#include "core/resolve.hpp"
#include "core/tree.hpp"
#include "io/copy.hpp"

namespace mb::io {

using Progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

struct SplitJob {
  std::string input;       // path of the batch file
  std::string output_dir;  // created if missing
  bool force = false;      // replace an earlier split in output_dir
  std::size_t buffer_bytes = h5::kDefaultBufferBytes;
  std::uint64_t workers = 1;        // -j: processes writing output files in parallel
  unsigned stall_seconds = 600;     // the workers' own stall watchdog
  nlohmann::ordered_json spec;     // resolved spec, for the manifest
  nlohmann::ordered_json options;  // split options, for the manifest
  std::string tool_version;
  Progress progress;
};

// Writes the microbatches and the manifest; returns the file names written.
// On any error nothing is left under a final name.
std::vector<std::string> write_split(const SplitJob& job, const NodeInfo& tree, const Resolution& resolution,
                                     const SplitPlan& plan);

}  // namespace mb::io
