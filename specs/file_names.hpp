#pragma once
// The names of a split's output files: what split writes and the manifest
// lists, and what merge and verify recognise in a directory. No JSON.
#include <cstdint>
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

}  // namespace mb::specs
