#include <doctest/doctest.h>

#include <string>

#include "core/derived.hpp"
#include "core/error.hpp"
#include "helpers.hpp"

using mb::test::message_of;
using mb::Offsets;
using mb::Quantity;

TEST_CASE("max_seqlen and num_tokens from offsets") {
  CHECK(mb::derive(Quantity::MaxSeqlen, Offsets{0, 3, 10, 12}) == 7);
  CHECK(mb::derive(Quantity::NumTokens, Offsets{0, 3, 10, 12}) == 12);
  CHECK(mb::derive(Quantity::MaxSeqlen, Offsets{0, 0, 0}) == 0);  // empty sequences
  CHECK(mb::derive(Quantity::MaxSeqlen, Offsets{0}) == 0);        // no sequences
  CHECK(mb::derive(Quantity::NumTokens, Offsets{0}) == 0);
  CHECK(mb::derive(Quantity::MaxSeqlen, Offsets{5, 9}) == 4);     // not rebased: offsets[-1] - offsets[0]
  CHECK(mb::derive(Quantity::NumTokens, Offsets{5, 9}) == 4);
  CHECK(mb::derive(Quantity::MaxSeqlen, Offsets{0, UINT64_MAX}) == UINT64_MAX);
  CHECK(std::string(mb::quantity_name(Quantity::MaxSeqlen)) == "max_seqlen");
  CHECK(std::string(mb::quantity_name(Quantity::NumTokens)) == "num_tokens");
}

TEST_CASE("a derived value must fit the leaf's integer type") {
  CHECK(mb::largest_value({false, 8, "uint8"}) == 255);
  CHECK(mb::largest_value({true, 8, "int8"}) == 127);
  CHECK(mb::largest_value({true, 64, "int64"}) == static_cast<std::uint64_t>(INT64_MAX));
  CHECK(mb::largest_value({false, 64, "uint64"}) == UINT64_MAX);
  CHECK_NOTHROW(mb::check_fits("f: /m", Quantity::MaxSeqlen, 255, {false, 8, "uint8"}));
  CHECK_NOTHROW(mb::check_fits("f: /m", Quantity::MaxSeqlen, 0, {true, 8, "int8"}));
  CHECK(message_of([] { mb::check_fits("f: /m", Quantity::MaxSeqlen, 256, {false, 8, "uint8"}); }) ==
        "f: /m: max_seqlen 256 does not fit uint8 (at most 255)");
  CHECK(message_of([] { mb::check_fits("f: /n", Quantity::NumTokens, 32768, {true, 16, "int16 (big-endian)"}); }) ==
        "f: /n: num_tokens 32768 does not fit int16 (big-endian) (at most 32767)");
}

TEST_CASE("a stored value is compared exactly, whatever its sign") {
  CHECK(mb::same_value(mb::StoredInteger{std::int64_t{7}}, 7));
  CHECK_FALSE(mb::same_value(mb::StoredInteger{std::int64_t{-1}}, UINT64_MAX));  // -1 is no 2^64-1
  CHECK(mb::same_value(mb::StoredInteger{UINT64_MAX}, UINT64_MAX));
  CHECK_FALSE(mb::same_value(mb::StoredInteger{std::uint64_t{8}}, 7));
  CHECK(mb::integer_text(mb::StoredInteger{std::int64_t{-3}}) == "-3");
  CHECK(mb::integer_text(mb::StoredInteger{UINT64_MAX}) == "18446744073709551615");
}

TEST_CASE("an inconsistent stored value is refused naming both values") {
  const std::string what = "in.h5: /max_seqlen", offsets = "/cu_seqlens";
  CHECK_NOTHROW(mb::check_stored({what, Quantity::MaxSeqlen, offsets}, std::int64_t{7}, Offsets{0, 3, 10}));
  std::string message;
  try {
    mb::check_stored({what, Quantity::MaxSeqlen, offsets}, std::int64_t{9}, Offsets{0, 3, 10});
  } catch (const mb::Error& e) {
    message = e.what();
  }
  CHECK(message.rfind("in.h5: /max_seqlen: holds max_seqlen 9, but its offsets /cu_seqlens give max_seqlen 7", 0) ==
        0);
}

TEST_CASE("num_sequences counts the offsets' sequences, num_rows is checked against a length") {
  CHECK(mb::derive(Quantity::NumSequences, Offsets{0, 3, 10, 12}) == 3);
  CHECK(mb::derive(Quantity::NumSequences, Offsets{0}) == 0);
  const std::string what = "b.h5: /df/table@NROWS";
  const std::string table = "/df/table";
  CHECK_NOTHROW(mb::check_stored({what, Quantity::NumRows, table}, std::int64_t{20}, std::uint64_t{20}));
  CHECK(message_of([&] { mb::check_stored({what, Quantity::NumRows, table}, std::int64_t{19}, std::uint64_t{20}); })
            .rfind("b.h5: /df/table@NROWS: holds num_rows 19, but /df/table has 20 rows", 0) == 0);
}
