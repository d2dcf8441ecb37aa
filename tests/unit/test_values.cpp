#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "core/values.hpp"

using mb::ValueType;
using K = ValueType::Kind;

TEST_CASE("floats compare on their bits: NaN equals itself, -0.0 differs from 0.0") {
  const auto f64 = ValueType::scalar(K::Float, 8);
  const double a[] = {1.0, std::nan(""), -0.0};
  const double b[] = {1.0, std::nan(""), 0.0};
  CHECK(mb::first_difference(f64, a, b, 2) == std::nullopt);
  CHECK(mb::first_difference(f64, a, b, 3) == 2u);
}

TEST_CASE("variable-length strings compare by content, not pointer") {
  const auto vs = ValueType::scalar(K::VlenString, sizeof(char*));
  char x[] = "hello", y[] = "hello", z[] = "help";
  const char* a[] = {x, nullptr};
  const char* b[] = {y, ""};
  const char* c[] = {z, nullptr};
  CHECK(mb::first_difference(vs, a, b, 2) == std::nullopt);
  CHECK(mb::first_difference(vs, a, c, 2) == 0u);
  CHECK(mb::format_element(vs, &a[0]) == "'hello'");
}

TEST_CASE("compound members are compared member by member, skipping padding") {
  ValueType t = ValueType::scalar(K::Compound, 16);
  t.elements = {ValueType::scalar(K::Int, 4), ValueType::scalar(K::Float, 8)};
  t.names = {"a", "b"};
  t.offsets = {0, 8};
  unsigned char p[16] = {}, q[16] = {};
  const std::int32_t i = 7;
  const double d = 2.5;
  std::memcpy(p, &i, 4);
  std::memcpy(p + 8, &d, 8);
  std::memcpy(q, p, 16);
  q[5] = 0xff;  // padding byte
  CHECK(mb::equal_element(t, p, q));
  q[9] ^= 1;
  CHECK_FALSE(mb::equal_element(t, p, q));
  CHECK(mb::format_element(t, p) == "(7, 2.5)");
}

TEST_CASE("formatting is numpy-like") {
  const auto i8 = ValueType::scalar(K::Int, 1);
  const std::int8_t m = -5;
  CHECK(mb::format_element(i8, &m) == "-5");
  const auto u16be = ValueType::scalar(K::UInt, 2, true);
  const unsigned char be[] = {0x01, 0x02};
  CHECK(mb::format_element(u16be, be) == "258");
  const auto f32 = ValueType::scalar(K::Float, 4);
  const float fs[] = {1.0f, -0.0f, 0.1f};
  CHECK(mb::format_elements(f32, fs, 3, true) == "[1.0, -0.0, 0.1]");
  CHECK(mb::format_elements(f32, fs, 1, true) == "1.0");
  CHECK(mb::format_elements(f32, fs, 3, true, 2) == "[1.0, -0.0, …]");

  ValueType b = ValueType::scalar(K::Enum, 1);
  b.elements = {ValueType::scalar(K::Int, 1)};
  b.names = {"FALSE", "TRUE"};
  b.enum_values = {0, 1};
  const std::int8_t t = 1;
  CHECK(mb::format_element(b, &t) == "True");

  ValueType c = ValueType::scalar(K::Compound, 16);
  c.elements = {ValueType::scalar(K::Float, 8), ValueType::scalar(K::Float, 8)};
  c.names = {"r", "i"};
  c.offsets = {0, 8};
  const double z[] = {1.0, -2.0};
  CHECK(mb::format_element(c, z) == "(1.0-2.0j)");

  const auto s4 = ValueType::scalar(K::FixedString, 4);
  CHECK(mb::format_element(s4, "ab\0\0") == "b'ab'");
  CHECK(mb::format_index({2, 3}, 5) == "[1, 2]");
}

TEST_CASE("half_to_float is exact on normals, subnormals, zeros, inf and nan") {
  CHECK(mb::half_to_float(0x3c00) == 1.0f);
  CHECK(mb::half_to_float(0xc000) == -2.0f);
  CHECK(mb::half_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(std::signbit(mb::half_to_float(0x8000)));
  CHECK(std::isinf(mb::half_to_float(0x7c00)));
  CHECK(std::isnan(mb::half_to_float(0x7e00)));
  CHECK(mb::half_to_float(0x7bff) == 65504.0f);
}
