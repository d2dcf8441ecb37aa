#pragma once
// The plan's own steps, shared by its files (plan.cpp: rows and sequences;
// plan_context_parallel.cpp: CP ranks). Not for use outside core/plan*.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/packed.hpp"
#include "core/plan.hpp"

namespace mb::planning {

// Something whose length decides how many microbatches there can be: a
// split axis (per data-parallel slice), or the packed sequence count.
struct CutLength {
  std::string path;
  std::uint64_t length;
  const char* unit;  // "rows on its split axis", "sequences"
  // The netCDF dimension of the split axis (NodeInfo::dimensions), "" when
  // none: every dataset along it shares the length, and the user knows the
  // dimension by name rather than the first dataset that happens to be cut.
  std::string dimension;
};

struct Leaves {
  std::vector<CutLength> split;  // Split leaves
  std::vector<const NodeInfo*> offsets, packed, per_sequence;
  std::vector<const NodeInfo*> sequence_axis;  // Split leaves with a sequence axis
};

// The packed sequences of the input, checked: the offsets by path, and the
// tokens per sequence summed over them.
struct Sequences {
  SequencePlan plan;  // without runs
  std::map<std::string, Offsets> offsets;
  std::vector<std::uint64_t> tokens;
};

// The cells (data-parallel rank, microbatch) base file `base` holds, in
// order: in the per-microbatch layout, cell (d, base) of every rank d; in
// the per-rank layout (and with one rank), cell `base` alone.
std::vector<Range> cells_of(const SplitPlan& plan, std::uint64_t base);

// A split that writes a twin beside every offsets dataset (`flag` says
// which: PATH_padded, PATH_dp_bounds) refuses a batch that holds one
// already rather than shadow it.
void check_twins_free(const NodeInfo& root, const Leaves& leaves, std::string (*named)(const std::string&),
                      const char* flag);

// Context parallelism: every file of the plan so far becomes one file per
// CP rank (checked first: something to cut, lengths that 2C divides).
void cut_context_parallel(const NodeInfo& root, const Leaves& leaves, const Resolution& resolution,
                          const Sequences& sequences, const SplitOptions& options, SplitPlan& plan);

}  // namespace mb::planning
