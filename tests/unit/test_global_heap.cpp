#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/global_heap.hpp"

namespace {

using Bytes = std::vector<unsigned char>;

void put(Bytes& b, std::uint64_t v, unsigned n) {
  for (unsigned k = 0; k < n; ++k) b.push_back(static_cast<unsigned char>(v >> (8 * k)));
}

// A collection as libhdf5 writes one (8-byte sizes): header, objects padded
// to 8 bytes, then the free-space object up to `total` bytes.
Bytes collection(const std::vector<std::pair<unsigned, std::string>>& objects, std::uint64_t total) {
  Bytes b = {'G', 'C', 'O', 'L', 1, 0, 0, 0};
  put(b, total, 8);
  for (const auto& [index, data] : objects) {
    put(b, index, 2);
    put(b, 1, 2);
    put(b, 0, 4);
    put(b, data.size(), 8);
    b.insert(b.end(), data.begin(), data.end());
    while (b.size() % 8 != 0) b.push_back(0);
  }
  const std::uint64_t free_bytes = total - b.size();
  if (free_bytes >= 16) {
    put(b, 0, 2);
    put(b, 0, 2);
    put(b, 0, 4);
    put(b, free_bytes, 8);
  }
  b.resize(total, 0);
  return b;
}

std::string object_text(const Bytes& b, const mb::heap::Object& o) {
  return {reinterpret_cast<const char*>(b.data()) + o.offset, static_cast<std::size_t>(o.size)};
}

}  // namespace

TEST_CASE("global heap: a stored element decodes to length, collection address and index") {
  Bytes e;
  put(e, 11, 4);
  put(e, 0x123456789a, 8);
  put(e, 7, 4);
  const auto ref = mb::heap::decode_ref(e.data(), {});
  REQUIRE(ref);
  CHECK(ref->length == 11);
  CHECK(ref->address == 0x123456789a);
  CHECK(ref->index == 7);
  Bytes four;  // 4-byte addresses
  put(four, 3, 4);
  put(four, 4096, 4);
  put(four, 2, 4);
  const auto small = mb::heap::decode_ref(four.data(), {4, 4});
  REQUIRE(small);
  CHECK(small->address == 4096);
  CHECK(small->index == 2);
  Bytes undefined;
  put(undefined, 0, 4);
  put(undefined, ~std::uint64_t{0}, 8);
  put(undefined, 1, 4);
  CHECK_FALSE(mb::heap::decode_ref(undefined.data(), {}));
  CHECK(mb::heap::Sizes{}.element() == 16);
  CHECK_FALSE(mb::heap::Sizes{16, 8}.supported());
}

TEST_CASE("global heap: a collection's objects are found by index, padding and free space skipped") {
  const Bytes b = collection({{1, "hello"}, {2, ""}, {3, "exactly8"}, {5, "a longer string, past 8"}}, 4096);
  REQUIRE(mb::heap::collection_size(b, {}) == 4096u);
  const auto objects = mb::heap::parse_collection(b, {});
  REQUIRE(objects);
  REQUIRE(objects->size() == 6);
  CHECK_FALSE((*objects)[0].present);
  CHECK_FALSE((*objects)[4].present);
  CHECK(object_text(b, (*objects)[1]) == "hello");
  CHECK((*objects)[2].present);
  CHECK((*objects)[2].size == 0);
  CHECK(object_text(b, (*objects)[3]) == "exactly8");
  CHECK(object_text(b, (*objects)[5]) == "a longer string, past 8");
  // A tail too small for an object header is free space.
  const Bytes tight = collection({{1, "abcdefgh"}}, 16 + 16 + 8 + 8);
  const auto t = mb::heap::parse_collection(tight, {});
  REQUIRE(t);
  CHECK(object_text(tight, (*t)[1]) == "abcdefgh");
}

TEST_CASE("global heap: anything off the format is refused, never read past the end") {
  const Bytes good = collection({{1, "hello"}}, 4096);
  Bytes magic = good;
  magic[0] = 'X';
  CHECK_FALSE(mb::heap::parse_collection(magic, {}));
  Bytes version = good;
  version[4] = 2;
  CHECK_FALSE(mb::heap::parse_collection(version, {}));
  // The stated size must be the bytes given.
  CHECK_FALSE(mb::heap::parse_collection(std::span(good).first(2048), {}));
  Bytes tiny = good;
  tiny[8] = 8;
  tiny[9] = 0;
  CHECK_FALSE(mb::heap::collection_size(tiny, {}));
  // An object whose size runs past the end of the collection.
  Bytes overrun = good;
  overrun[16 + 8] = 0xff;
  overrun[16 + 9] = 0xff;
  CHECK_FALSE(mb::heap::parse_collection(overrun, {}));
  // A free-space object of size 0 would never advance (libhdf5 loops).
  Bytes stuck = good;
  stuck[16] = 0;
  for (int k = 0; k < 8; ++k) stuck[16 + 8 + k] = 0;
  CHECK_FALSE(mb::heap::parse_collection(stuck, {}));
}
