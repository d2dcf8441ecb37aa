#include "core/context_parallel.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb {
namespace {

void append(RowMap& map, std::uint64_t begin, std::uint64_t count) {
  if (count == 0) return;
  if (!map.empty() && map.back().stride == 1 && map.back().stop() == begin) {
    map.back().count += count;
    return;
  }
  map.push_back({begin, count, 1});
}

}  // namespace

void append_zigzag(RowMap& map, const Range& document, std::uint64_t degree, std::uint64_t rank) {
  const std::uint64_t stripe = document.size() / (2 * degree);
  append(map, document.begin + rank * stripe, stripe);
  append(map, document.begin + (2 * degree - 1 - rank) * stripe, stripe);
}

RowMap zigzag(const std::vector<Range>& documents, std::uint64_t degree, std::uint64_t rank) {
  RowMap map;
  for (const Range& d : documents) append_zigzag(map, d, degree, rank);
  return map;
}

std::vector<Range> documents_of(const Offsets& offsets, const Range& run) {
  std::vector<Range> out;
  for (std::uint64_t s = run.begin; s < run.end; ++s) out.push_back({offsets[s], offsets[s + 1]});
  return out;
}

std::vector<Range> documents_from_share(const Offsets& share, std::uint64_t degree, std::uint64_t begin) {
  std::vector<Range> out;
  for (std::size_t s = 0; s + 1 < share.size(); ++s)
    out.push_back({begin + share[s] * degree, begin + share[s + 1] * degree});
  return out;
}

void require_zigzag_divisible(std::uint64_t length, std::uint64_t degree, const std::string& what) {
  if (length % (2 * degree) != 0)
    throw Error(fmt::format("{}, not divisible into 2 x --cp-degree {} = {} equal stripes", what, degree, 2 * degree));
}

void require_documents_divisible(const Offsets& offsets, std::uint64_t degree, const std::string& what) {
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    const std::uint64_t length = offsets[s + 1] - offsets[s];
    if (length % (2 * degree) != 0)
      throw Error(fmt::format("{}: sequence {} has {} tokens, not divisible into 2 x --cp-degree {} = {} equal "
                              "stripes (pad it to a multiple of {})",
                              what, s, length, degree, 2 * degree, 2 * degree));
  }
}

std::uint64_t causal_work(const RowMap& positions) {
  std::uint64_t work = 0;
  for (const Segment& s : positions)  // sum over k < count of begin + k * stride + 1
    work += s.count * (s.begin + 1) + s.stride * (s.count * (s.count - 1) / 2);  // (0 when count is 0)
  return work;
}

CpLoad cp_load(const std::string& what, const std::vector<std::uint64_t>& lengths, std::uint64_t degree) {
  CpLoad load{what, std::vector<std::uint64_t>(degree), std::vector<std::uint64_t>(degree),
              std::vector<std::uint64_t>(degree), 0};
  for (const std::uint64_t length : lengths) {
    load.total_work += causal_work({{0, length, 1}});
    const std::uint64_t share = length / degree;
    for (std::uint64_t r = 0; r < degree; ++r) {
      load.tokens[r] += share;
      load.work[r] += causal_work(zigzag({{0, length}}, degree, r));
      load.contiguous[r] += causal_work({{r * share, share, 1}});
    }
  }
  return load;
}

}  // namespace mb
