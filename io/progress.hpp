#pragma once
// Progress reports from a job to whoever shows them (cli/ draws them on a
// terminal). No HDF5 here.
#include <cstdint>
#include <functional>

namespace mb::io {

// Called with the work done so far and the total, in the job's own unit.
using Progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

}  // namespace mb::io
