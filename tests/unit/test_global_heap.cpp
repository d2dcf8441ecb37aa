#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/global_heap.hpp"

namespace {

using Bytes = std::vector<unsigned char>;

void put(Bytes& b, std::uint64_t v, unsigned n) {
  for (unsigned k = 0; k < n; ++k) b.push_back(static_cast<unsigned char>(v >> (8 * k)));
}

// A collection as libhdf5 writes one (8-byte sizes, or `length`-byte ones):
// header, objects padded to 8 bytes (reference count 0, as H5HG_insert
// leaves it), then the free-space object up to `total` bytes.
Bytes collection(const std::vector<std::pair<unsigned, std::string>>& objects, std::uint64_t total,
                 unsigned length = 8) {
  Bytes b = {'G', 'C', 'O', 'L', 1, 0, 0, 0};
  put(b, total, length);
  while (b.size() % 8 != 0) b.push_back(0);
  for (const auto& [index, data] : objects) {
    put(b, index, 2);
    put(b, 0, 2);
    put(b, 0, 4);
    put(b, data.size(), length);
    while (b.size() % 8 != 0) b.push_back(0);
    b.insert(b.end(), data.begin(), data.end());
    while (b.size() % 8 != 0) b.push_back(0);
  }
  const std::uint64_t free_bytes = total - b.size();
  if (free_bytes >= 16) {
    put(b, 0, 2);
    put(b, 0, 2);
    put(b, 0, 4);
    put(b, free_bytes, length);
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

TEST_CASE("global heap: 4-byte lengths pad each object header to 8 bytes, as libhdf5 does") {
  const mb::heap::Sizes four{4, 4};
  const Bytes b = collection({{1, "hello"}, {2, "world!"}}, 4096, 4);
  const auto objects = mb::heap::parse_collection(b, four);
  REQUIRE(objects);
  REQUIRE(objects->size() == 3);
  CHECK(object_text(b, (*objects)[1]) == "hello");
  CHECK(object_text(b, (*objects)[2]) == "world!");
}

namespace {

std::vector<const char*> pointers(const std::vector<std::string>& strings) {
  std::vector<const char*> out;
  for (const auto& s : strings) out.push_back(s.c_str());
  return out;
}

}  // namespace

TEST_CASE("global heap: packed strings are the collection libhdf5 would write, nulls left out") {
  const std::vector<const char*> strings = {"hello", nullptr, "", "exactly8"};
  const mb::heap::Packed p = mb::heap::pack(strings, {});
  CHECK(p.bytes == collection({{1, "hello"}, {2, ""}, {3, "exactly8"}}, 4096));
  CHECK(p.free == 4096 - 16 - 3 * 16 - 8 - 8);
  REQUIRE(p.refs.size() == 4);
  CHECK(p.refs[0].length == 5);
  CHECK(p.refs[0].index == 1);
  CHECK(p.refs[1].index == 0);
  CHECK(p.refs[2].length == 0);
  CHECK(p.refs[2].index == 2);
  CHECK(p.refs[3].index == 3);
  // The elements point at the collection where it is put, a null one at nothing.
  Bytes elements(4 * 16);
  mb::heap::encode_refs(p.refs, 8192, {}, elements.data());
  const auto first = mb::heap::decode_ref(elements.data(), {});
  REQUIRE(first);
  CHECK(first->length == 5);
  CHECK(first->address == 8192);
  CHECK(first->index == 1);
  CHECK(std::all_of(elements.begin() + 16, elements.begin() + 32, [](unsigned char c) { return c == 0; }));
  const auto empty = mb::heap::decode_ref(elements.data() + 32, {});
  REQUIRE(empty);
  CHECK(empty->address == 8192);
  CHECK(empty->length == 0);
  // Nothing but nulls: no collection at all.
  const std::vector<const char*> nulls = {nullptr, nullptr};
  CHECK(mb::heap::pack(nulls, {}).bytes.empty());
}

// Every collection of `p` parsed, each string found where its ref says.
void check_packed(const mb::heap::Packed& p, const std::vector<std::string>& strings, const mb::heap::Sizes& sizes) {
  REQUIRE(p.refs.size() == strings.size());
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const mb::heap::Ref& ref = p.refs[i];
    REQUIRE(ref.address < p.bytes.size());
    const auto size = mb::heap::collection_size(std::span(p.bytes).subspan(ref.address), sizes);
    REQUIRE(size);
    const auto objects = mb::heap::parse_collection(std::span(p.bytes).subspan(ref.address, *size), sizes);
    REQUIRE(objects);
    REQUIRE(ref.index < objects->size());
    const mb::heap::Object& o = (*objects)[ref.index];
    REQUIRE(o.present);
    CHECK(o.size == strings[i].size());
    CHECK(std::string(reinterpret_cast<const char*>(p.bytes.data()) + ref.address + o.offset, o.size) == strings[i]);
  }
}

TEST_CASE("global heap: collections hold at most 64 KiB, at least 4 KiB, a larger string alone") {
  std::vector<std::string> strings;
  for (int i = 0; i < 5000; ++i) {
    if (i == 2000) strings.emplace_back(100000, 'L');  // larger than any collection
    strings.push_back("string number " + std::to_string(i) + "!");
  }
  const mb::heap::Packed p = mb::heap::pack(pointers(strings), {});
  check_packed(p, strings, {});
  // Walk the collections: sizes within bounds (or one string alone), one after another, to the end.
  std::uint64_t at = 0;
  int count = 0;
  while (at < p.bytes.size()) {
    const auto size = mb::heap::collection_size(std::span(p.bytes).subspan(at), {});
    REQUIRE(size);
    CHECK(*size % 8 == 0);
    CHECK(*size >= 4096);
    const auto objects = mb::heap::parse_collection(std::span(p.bytes).subspan(at, *size), {});
    REQUIRE(objects);
    if (*size > 65536) CHECK(objects->size() == 2);  // index 0 and the large string
    at += *size;
    ++count;
  }
  CHECK(at == p.bytes.size());
  CHECK(count > 3);
  CHECK(p.refs[2000].index == 1);
  CHECK(p.refs[2001].index == 1);  // the next string starts the next collection
  // With 4-byte addresses and lengths.
  check_packed(mb::heap::pack(pointers(strings), {4, 4}), strings, {4, 4});
}

TEST_CASE("global heap: a tail too small for a free-space header is left bare, as libhdf5 leaves it") {
  // Header 16 + one object (16 + 4056) = 4088 of 4096: 8 bytes of bare free space.
  const std::vector<std::string> strings = {std::string(4056, 'x')};
  const mb::heap::Packed p = mb::heap::pack(pointers(strings), {});
  REQUIRE(p.bytes.size() == 4096);
  CHECK(p.free == 8);
  CHECK(std::all_of(p.bytes.end() - 8, p.bytes.end(), [](unsigned char c) { return c == 0; }));
  CHECK(p.bytes == collection({{1, strings[0]}}, 4096));
  check_packed(p, strings, {});
}
