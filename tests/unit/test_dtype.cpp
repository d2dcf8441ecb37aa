// specs/dtype: the dtype, HDF5 type and values inspect --json writes, for
// the types an ordinary batch seldom has (opaque data, sequences of
// numbers, floats numpy has no name for).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "specs/dtype.hpp"

using mb::ValueType;
using K = mb::ValueType::Kind;

TEST_CASE("dtype: opaque data is |V with its size, and its values are bytes") {
  const ValueType opaque = ValueType::scalar(K::Opaque, 3);
  CHECK(mb::specs::dtype_json(opaque) == "|V3");
  CHECK(mb::specs::h5type_json(opaque) == nlohmann::ordered_json{{"class", "opaque"}, {"size", 3}});
  const unsigned char bytes[] = {0x00, 0x7f, 0xff};
  CHECK(mb::specs::values_json(opaque, bytes, {}) == "\\x00\\x7f\\xff");
}

TEST_CASE("dtype: a sequence of integers is O, a vlen of its base, and a list per element") {
  ValueType seq = ValueType::scalar(K::Vlen, sizeof(mb::VlenSeq));
  seq.elements.push_back(ValueType::scalar(K::Int, 4));
  CHECK(mb::specs::dtype_json(seq) == "O");
  CHECK(mb::specs::h5type_json(seq) == nlohmann::ordered_json{{"class", "vlen"}, {"base", "<i4"}});
  std::int32_t first[] = {1, -2, 3};
  const mb::VlenSeq values[] = {{3, first}, {0, nullptr}};
  CHECK(mb::specs::values_json(seq, values, {2}).dump() == "[[1,-2,3],[]]");
}

TEST_CASE("dtype: a float of a width numpy has no name for is shown as its bytes") {
  const ValueType wide = ValueType::scalar(K::Float, 10);  // x87 extended precision, as some files hold
  const unsigned char bytes[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(mb::specs::values_json(wide, bytes, {}) == "\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\x09\\x0a");
}
