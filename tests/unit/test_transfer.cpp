// io/transfer's dispatcher between datasets in memory (h5_memory.hpp): rows
// copied, by whichever path it picks, are exactly the source's rows, byte
// for byte, and nothing else of the destination changes. Each case runs
// with the byte paths on and off; the stored-chunk path is told apart by
// what only it can keep (stored bytes that encoding again would not give).
#include <doctest/doctest.h>
#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/selection.hpp"
#include "h5_memory.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/library.hpp"
#include "io/transfer/copy.hpp"

namespace {
using mb::Selection;
using mb::Shape;
using mb::io::transfer::Policy;
using mb::io::transfer::Side;
using mb::test::h5::Held;
using mb::test::h5::make_dataset;
using mb::test::h5::memory_file;
using mb::test::h5::read_all;
using mb::test::h5::unique_name;

// Creation properties with fill value `fill` (int64), chunked as `chunk` when given.
hid_t filled(std::int64_t fill, const Shape& chunk = {}, int gzip = -1) {
  const hid_t dcpl = chunk.empty() ? H5Pcreate(H5P_DATASET_CREATE) : mb::test::h5::chunked(chunk, gzip);
  REQUIRE(H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &fill) >= 0);
  return dcpl;
}

// The elements expected after copying `count` rows from `src_begin` of
// `src` (rows of `width`) to `dst_begin` of a destination of `dst_rows`
// rows holding `fill` elsewhere: computed element by element.
std::vector<std::int64_t> expected_rows(const std::vector<std::int64_t>& src, std::size_t width,
                                        std::size_t src_begin, std::size_t dst_rows, std::size_t dst_begin,
                                        std::size_t count, std::int64_t fill) {
  std::vector<std::int64_t> out(dst_rows * width, fill);
  for (std::size_t r = 0; r < count; ++r)
    for (std::size_t c = 0; c < width; ++c) out[(dst_begin + r) * width + c] = src[(src_begin + r) * width + c];
  return out;
}

std::vector<std::int64_t> pattern(std::size_t n) {
  std::vector<std::int64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int64_t>(i * 1000003 + 7) * (i % 2 ? -1 : 1);
  return v;
}

// Bytes compared, not values: a conversion on the way would show.
bool same_bytes(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(std::int64_t)) == 0;
}

// The filter mask and bytes of the stored chunk at `offset`.
std::pair<std::uint32_t, std::vector<unsigned char>> stored_chunk(hid_t dset, const std::vector<hsize_t>& offset) {
  hsize_t size = 0;
  REQUIRE(H5Dget_chunk_storage_size(dset, offset.data(), &size) >= 0);
  std::vector<unsigned char> bytes(size);
  std::uint32_t filters = 0;
  REQUIRE(H5Dread_chunk(dset, H5P_DEFAULT, offset.data(), &filters, bytes.data()) >= 0);
  return {filters, bytes};
}

Policy policy_with(bool byte_paths, std::size_t buffer_bytes = mb::io::transfer::kDefaultBufferBytes) {
  Policy p;
  p.byte_paths = byte_paths;
  p.buffer_bytes = buffer_bytes;
  return p;
}

}  // namespace

TEST_CASE("transfer: rows of a contiguous dataset land in place, the rest keeps its fill") {
  mb::io::h5::init_library();
  const std::string a = unique_name("contiguous-src"), b = unique_name("contiguous-dst");
  Held src_file(memory_file(a)), dst_file(memory_file(b));
  const auto values = pattern(10 * 3);
  Held src(make_dataset(src_file, "x", H5T_STD_I64LE, {10, 3}, H5T_NATIVE_INT64, values.data()));
  // Both byte paths on and off, and a buffer of 2 elements (many blocks).
  for (const Policy& policy : {policy_with(true), policy_with(false), policy_with(true, 16)}) {
    CAPTURE(policy.byte_paths);
    CAPTURE(policy.buffer_bytes);
    const std::string dst_name = "x" + std::to_string(policy.buffer_bytes) + std::to_string(policy.byte_paths);
    Held dcpl(filled(-1));
    Held dst(make_dataset(dst_file, dst_name, H5T_STD_I64LE, {8, 3}, H5I_INVALID_HID, nullptr, dcpl));
    mb::io::transfer::copy(Side::of(src, {a, "/x"}), Selection::rows({10, 3}, 0, {2, 5, 1}),
                           Side::of(dst, {b, "/" + dst_name}), Selection::rows({8, 3}, 0, {1, 5, 1}), policy);
    CHECK(same_bytes(read_all<std::int64_t>(dst, H5T_NATIVE_INT64), expected_rows(values, 3, 2, 8, 1, 5, -1)));
  }
}

TEST_CASE("transfer: aligned chunks move as stored bytes, and read back as the source's rows") {
  mb::io::h5::init_library();
  const std::string a = unique_name("chunks-src"), b = unique_name("chunks-dst");
  Held src_file(memory_file(a)), dst_file(memory_file(b));
  const auto values = pattern(16 * 2);
  // The source's chunks are the gzip streams libhdf5 makes of the values,
  // each with 8 bytes after its end, which inflating ignores: bytes no
  // write through the filter pipeline gives, so only a copy of the stored
  // chunks has them. Written into a dataset of its own, so that its every
  // chunk is one written here.
  Held dcpl(filled(0, {4, 2}, 6));
  Held plain(make_dataset(src_file, "plain", H5T_STD_I64LE, {16, 2}, H5T_NATIVE_INT64, values.data(), dcpl));
  Held src(make_dataset(src_file, "x", H5T_STD_I64LE, {16, 2}, H5I_INVALID_HID, nullptr, dcpl));
  const std::string trailer = "trailing";
  for (hsize_t row = 0; row < 16; row += 4) {
    auto [filters, bytes] = stored_chunk(plain, {row, 0});
    REQUIRE(filters == 0);
    bytes.insert(bytes.end(), trailer.begin(), trailer.end());
    const hsize_t at[2] = {row, 0};
    REQUIRE(H5Dwrite_chunk(src, H5P_DEFAULT, 0, at, bytes.size(), bytes.data()) >= 0);
  }
  REQUIRE(same_bytes(read_all<std::int64_t>(src, H5T_NATIVE_INT64), values));

  for (const bool byte_paths : {true, false}) {
    CAPTURE(byte_paths);
    const std::string dst_name = byte_paths ? "raw" : "slab";
    Held dst_dcpl(filled(-1, {4, 2}, 6));
    Held dst(make_dataset(dst_file, dst_name, H5T_STD_I64LE, {12, 2}, H5I_INVALID_HID, nullptr, dst_dcpl));
    // Source rows 4..11 to destination rows 0..7: two whole chunks.
    mb::io::transfer::copy(Side::of(src, {a, "/x"}), Selection::rows({16, 2}, 0, {4, 8, 1}),
                           Side::of(dst, {b, "/" + dst_name}), Selection::rows({12, 2}, 0, {0, 8, 1}),
                           policy_with(byte_paths));
    CHECK(same_bytes(read_all<std::int64_t>(dst, H5T_NATIVE_INT64), expected_rows(values, 2, 4, 12, 0, 8, -1)));
    // Both chunks are the source's stored bytes, trailer and all, only when moved as stored bytes.
    for (const hsize_t row : {0, 4}) {
      CAPTURE(row);
      const auto stored = stored_chunk(dst, {row, 0}).second;
      const auto source = stored_chunk(src, {row + 4, 0}).second;
      if (byte_paths) {
        CHECK(stored == source);
      } else {
        CHECK(stored == stored_chunk(plain, {row + 4, 0}).second);  // encoded again, by libhdf5
        CHECK(stored.size() + trailer.size() == source.size());
      }
    }
  }
}

TEST_CASE("transfer: chunked rows on and off the chunk grid, whole and edge chunks") {
  mb::io::h5::init_library();
  const std::string a = unique_name("tail-src"), b = unique_name("tail-dst");
  Held src_file(memory_file(a)), dst_file(memory_file(b));
  // Sources of 16 rows and of 14 (its last chunk an edge chunk of 2 rows).
  const auto values = pattern(16 * 2);
  Held src_dcpl(filled(0, {4, 2}, 1));
  Held src16(make_dataset(src_file, "x16", H5T_STD_I64LE, {16, 2}, H5T_NATIVE_INT64, values.data(), src_dcpl));
  Held src14(make_dataset(src_file, "x14", H5T_STD_I64LE, {14, 2}, H5T_NATIVE_INT64, values.data(), src_dcpl));
  struct Case {
    std::uint64_t src_rows, src_begin, dst_rows, dst_begin, count;
  };
  const Case cases[] = {
      {16, 3, 16, 3, 8},   // off the grid at both ends
      {16, 4, 12, 0, 10},  // on it, 2 rows past the last whole chunk, the end of neither dataset
      {16, 8, 10, 0, 8},   // whole chunks, not to the end of the destination
      {16, 12, 8, 4, 4},   // whole chunks to the end of both
      {14, 8, 6, 0, 6},    // to the end of both, an edge chunk of 2 rows in both
      {14, 8, 8, 0, 6},    // the source's edge chunk, not an edge of the destination
  };
  int n = 0;
  for (const bool byte_paths : {true, false}) {
    for (const Case& c : cases) {
      CAPTURE(byte_paths);
      CAPTURE(c.src_rows);
      CAPTURE(c.src_begin);
      CAPTURE(c.dst_rows);
      CAPTURE(c.dst_begin);
      CAPTURE(c.count);
      const hid_t src = c.src_rows == 16 ? src16.get() : src14.get();
      const std::string dst_name = "d" + std::to_string(n++);
      Held dcpl(filled(-5, {4, 2}, 1));
      Held dst(make_dataset(dst_file, dst_name, H5T_STD_I64LE, {c.dst_rows, 2}, H5I_INVALID_HID, nullptr, dcpl));
      mb::io::transfer::copy(Side::of(src, {a, "/x"}),
                             Selection::rows({c.src_rows, 2}, 0, {c.src_begin, c.count, 1}),
                             Side::of(dst, {b, "/" + dst_name}),
                             Selection::rows({c.dst_rows, 2}, 0, {c.dst_begin, c.count, 1}), policy_with(byte_paths));
      CHECK(same_bytes(read_all<std::int64_t>(dst, H5T_NATIVE_INT64),
                       expected_rows(values, 2, c.src_begin, c.dst_rows, c.dst_begin, c.count, -5)));
    }
  }
}

TEST_CASE("transfer: columns of a chunked dataset (rows along axis 1)") {
  mb::io::h5::init_library();
  const std::string a = unique_name("columns-src"), b = unique_name("columns-dst");
  Held src_file(memory_file(a)), dst_file(memory_file(b));
  const auto values = pattern(3 * 8);
  Held src_dcpl(filled(0, {3, 4}, 2));
  Held src(make_dataset(src_file, "x", H5T_STD_I64LE, {3, 8}, H5T_NATIVE_INT64, values.data(), src_dcpl));
  for (const bool byte_paths : {true, false}) {
    CAPTURE(byte_paths);
    const std::string dst_name = byte_paths ? "raw" : "slab";
    Held dcpl(filled(-1, {3, 4}, 2));
    Held dst(make_dataset(dst_file, dst_name, H5T_STD_I64LE, {3, 4}, H5I_INVALID_HID, nullptr, dcpl));
    // Columns 4..7 of every row.
    mb::io::transfer::copy(Side::of(src, {a, "/x"}), Selection::rows({3, 8}, 1, {4, 4, 1}),
                           Side::of(dst, {b, "/" + dst_name}), Selection::all({3, 4}), policy_with(byte_paths));
    std::vector<std::int64_t> expected;
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t c = 4; c < 8; ++c) expected.push_back(values[r * 8 + c]);
    CHECK(same_bytes(read_all<std::int64_t>(dst, H5T_NATIVE_INT64), expected));
  }
}

TEST_CASE("transfer: variable-length strings, contiguous and chunked, are copied by content") {
  mb::io::h5::init_library();
  const std::string a = unique_name("strings-src"), b = unique_name("strings-dst");
  Held src_file(memory_file(a)), dst_file(memory_file(b));
  const std::vector<std::string> values{"zero", "", "two", "three \xc3\xa9t\xc3\xa9", std::string(300, 'x'), "five"};
  Held contiguous(mb::test::h5::make_strings(src_file, "flat", values));
  Held chunk_dcpl(mb::test::h5::chunked({2}, 4));
  Held chunked(mb::test::h5::make_strings(src_file, "chunked", values, chunk_dcpl));
  int n = 0;
  for (const hid_t src : {contiguous.get(), chunked.get()}) {
    for (const bool byte_paths : {true, false}) {
      CAPTURE(src == contiguous.get());
      CAPTURE(byte_paths);
      // Chunked alike (for the chunked source): a stored-chunk copy would
      // carry heap addresses of the other file, which must not happen.
      Held dcpl(src == chunked.get() ? mb::test::h5::chunked({2}, 4) : H5Pcreate(H5P_DATASET_CREATE));
      Held type(mb::test::h5::vlen_utf8());
      const std::string dst_name = "s" + std::to_string(n++);
      Held dst(make_dataset(dst_file, dst_name, type, {4}, H5I_INVALID_HID, nullptr, dcpl));
      // Rows 2..5 of the source to all 4 of the destination: chunk-aligned on both sides.
      mb::io::transfer::copy(Side::of(src, {a, "/src"}), Selection::rows({6}, 0, {2, 4, 1}),
                             Side::of(dst, {b, "/" + dst_name}), Selection::all({4}), policy_with(byte_paths));
      CHECK(mb::test::h5::read_strings(dst) == std::vector<std::string>(values.begin() + 2, values.end()));
    }
  }
}

TEST_CASE("transfer: a dataset read into memory and written from it") {
  mb::io::h5::init_library();
  const std::string a = unique_name("memory-src"), b = unique_name("memory-dst");
  Held src_file(memory_file(a)), dst_file(memory_file(b));
  const auto values = pattern(6 * 3);
  Held src(make_dataset(src_file, "x", H5T_STD_I64LE, {6, 3}, H5T_NATIVE_INT64, values.data()));

  // Rows 1..4 into rows 1..4 of a (5, 3) array in memory.
  mb::io::h5::Buffer memory(H5T_NATIVE_INT64);
  memory.prepare(5 * 3);
  const Side in_memory = Side::in_memory(memory, {5, 3}, {"(memory)", ""});
  mb::io::transfer::copy(Side::of(src, {a, "/x"}), Selection::rows({6, 3}, 0, {1, 4, 1}), in_memory,
                         Selection::rows({5, 3}, 0, {1, 4, 1}), policy_with(true));
  const auto* held = static_cast<const std::int64_t*>(memory.data());
  const std::vector<std::int64_t> read(held, held + 5 * 3);
  CHECK(same_bytes(read, expected_rows(values, 3, 1, 5, 1, 4, 0)));

  // The memory's rows 2..4 to rows 0..2 of a (4, 3) dataset, and all of it to a (5, 3) one.
  Held dcpl(filled(-1));
  Held part(make_dataset(dst_file, "part", H5T_STD_I64LE, {4, 3}, H5I_INVALID_HID, nullptr, dcpl));
  mb::io::transfer::copy(in_memory, Selection::rows({5, 3}, 0, {2, 3, 1}), Side::of(part, {b, "/part"}),
                         Selection::rows({4, 3}, 0, {0, 3, 1}), policy_with(true));
  CHECK(same_bytes(read_all<std::int64_t>(part, H5T_NATIVE_INT64), expected_rows(read, 3, 2, 4, 0, 3, -1)));
  Held whole(make_dataset(dst_file, "whole", H5T_STD_I64LE, {5, 3}, H5I_INVALID_HID, nullptr, dcpl));
  mb::io::transfer::copy(in_memory, Selection::all({5, 3}), Side::of(whole, {b, "/whole"}), Selection::all({5, 3}),
                         policy_with(true));
  CHECK(same_bytes(read_all<std::int64_t>(whole, H5T_NATIVE_INT64), read));
}
