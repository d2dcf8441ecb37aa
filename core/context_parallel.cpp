#include "core/context_parallel.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb {
void append_zigzag(RowMap& map, const Range& document, std::uint64_t degree, std::uint64_t rank) {
  const std::uint64_t stripe = document.size() / (2 * degree);
  append_rows(map, document.begin + rank * stripe, stripe);
  append_rows(map, document.begin + (2 * degree - 1 - rank) * stripe, stripe);
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

std::vector<Range> documents_along(const std::vector<std::uint64_t>& lengths, const RowMap& whole) {
  std::vector<Range> out;
  std::size_t k = 0;       // the segment of `whole` being filled
  std::uint64_t used = 0;  // rows of it filled so far
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    const std::uint64_t length = lengths[s];
    if (length == 0) {  // holds no position: anywhere will do
      out.push_back({0, 0});
      continue;
    }
    while (k < whole.size() && used == whole[k].count) ++k, used = 0;
    if (k == whole.size() || whole[k].stride != 1 || whole[k].count - used < length)
      throw Error(fmt::format("sequence {} of {} tokens does not fit the rows of its microbatch", s, length));
    out.push_back({whole[k].begin + used, whole[k].begin + used + length});
    used += length;
  }
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
                              "stripes (pad it to a multiple of {}, or give --cp-pad)",
                              what, s, length, degree, 2 * degree, 2 * degree));
  }
}

std::uint64_t padded_length(std::uint64_t length, std::uint64_t degree) {
  const std::uint64_t unit = 2 * degree;
  const std::uint64_t rest = length % unit;
  if (rest != 0 && length > UINT64_MAX - (unit - rest))
    throw Error(fmt::format("a sequence of {} tokens padded to a multiple of {} does not fit 64 bits", length, unit));
  return rest == 0 ? length : length + (unit - rest);
}

std::uint64_t real_share(std::uint64_t length, std::uint64_t degree, std::uint64_t rank) {
  const std::uint64_t stripe = padded_length(length, degree) / (2 * degree);
  const auto real_in = [&](std::uint64_t first) { return length <= first ? 0 : std::min(stripe, length - first); };
  return real_in(rank * stripe) + real_in((2 * degree - 1 - rank) * stripe);
}

namespace {

// Appends a pair of segments of `count` rows, joined to the last pair when
// both continue it.
void append_pair(PaddedCut& cut, std::uint64_t batch, std::uint64_t file, std::uint64_t count) {
  if (count == 0) return;
  RowMap& b = cut.batch;
  RowMap& f = cut.file.rows;
  if (!b.empty() && b.back().stop() == batch && f.back().stop() == file) {
    b.back().count += count;
    f.back().count += count;
    return;
  }
  b.push_back({batch, count, 1});
  f.push_back({file, count, 1});
}

}  // namespace

PaddedCut padded_zigzag(const std::vector<Range>& documents, std::uint64_t degree, std::uint64_t rank) {
  PaddedCut cut;
  for (const Range& d : documents) {
    const std::uint64_t length = d.size(), stripe = padded_length(length, degree) / (2 * degree);
    const std::uint64_t second = (2 * degree - 1 - rank) * stripe;
    const auto real_in = [&](std::uint64_t first) { return length <= first ? 0 : std::min(stripe, length - first); };
    append_pair(cut, d.begin + rank * stripe, cut.file.length, real_in(rank * stripe));
    append_pair(cut, d.begin + second, cut.file.length + stripe, real_in(second));
    cut.file.length += 2 * stripe;
  }
  return cut;
}

RowMap complement(const RowMap& rows, std::uint64_t length) {
  RowMap out;
  std::uint64_t at = 0;
  for (const Segment& s : rows) {
    if (s.begin > at) out.push_back({at, s.begin - at, 1});
    at = s.stop();
  }
  if (length > at) out.push_back({at, length - at, 1});
  return out;
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
