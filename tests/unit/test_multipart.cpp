#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/multipart.hpp"
#include "io/remote/curl.hpp"
#include "io/remote/upload.hpp"

TEST_CASE("multipart: which files go up in parts, and in how many") {
  CHECK_FALSE(mb::is_multipart(mb::kMultipartThreshold - 1));
  CHECK(mb::is_multipart(mb::kMultipartThreshold));
  CHECK(mb::part_size(17ull << 20) == 8ull << 20);
  CHECK(mb::part_count(17ull << 20) == 3);
  CHECK(mb::part_count(16ull << 20) == 2);
  // Past 10,000 parts of 8 MiB the parts double, as often as needed.
  const std::uint64_t huge = 10000ull * (8ull << 20) + 1;
  CHECK(mb::part_size(huge) == 16ull << 20);
  CHECK(mb::part_count(huge) == 5001);
  CHECK(mb::part_count(1ull << 42) <= mb::kMostParts);
}

TEST_CASE("multipart: query values are escaped as Signature V4 signs them") {
  CHECK(mb::query_escape("abc-_.~XYZ09") == "abc-_.~XYZ09");
  CHECK(mb::query_escape("a/b+c=d e") == "a%2Fb%2Bc%3Dd%20e");
}

TEST_CASE("multipart: the completion document and ETags") {
  CHECK(mb::complete_document({"\"aa\"", "bb"}) ==
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"aa\"</ETag></Part>"
        "<Part><PartNumber>2</PartNumber><ETag>\"bb\"</ETag></Part></CompleteMultipartUpload>");
  CHECK(mb::unquoted("\"abc\"") == "abc");
  CHECK(mb::unquoted("W/\"abc\"") == "abc");
  CHECK(mb::is_md5_etag("d41d8cd98f00b204e9800998ecf8427e"));
  CHECK_FALSE(mb::is_md5_etag("d41d8cd98f00b204e9800998ecf8427e-2"));
  CHECK_FALSE(mb::is_md5_etag("zz1d8cd98f00b204e9800998ecf8427e"));
}

TEST_CASE("multipart: S3's ETag of a multipart upload is the MD5 of the parts' MD5s") {
  using mb::io::remote::md5_hex;
  CHECK(md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e");
  // Two parts "a" and "b": MD5 of the 32 bytes md5("a") || md5("b"), "-2".
  const std::string a = md5_hex("a"), b = md5_hex("b");
  std::string binary;
  for (const std::string& hex : {a, b})
    for (std::size_t i = 0; i < 32; i += 2) binary += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  CHECK(mb::multipart_etag({a, b}, md5_hex) == md5_hex(binary) + "-2");
  CHECK(mb::multipart_etag({a, b}, md5_hex) != md5_hex("ab") + "-2");
}

TEST_CASE("remote: elements of S3's XML answers, entities decoded") {
  using mb::io::remote::xml_element;
  const std::string doc = "<R><ETag>&quot;abc&quot;</ETag><Key>a&amp;b&lt;c</Key></R>";
  CHECK(xml_element(doc, "ETag") == "\"abc\"");
  CHECK(xml_element(doc, "Key") == "a&b<c");
  CHECK(xml_element(doc, "UploadId").empty());
}

TEST_CASE("escaped: libcurl percent-encodes all but the unreserved bytes, for queries and form bodies") {
  CHECK(mb::io::remote::escaped("a b/c~d.e_f-g+h=&") == "a%20b%2Fc~d.e_f-g%2Bh%3D%26");
  CHECK(mb::io::remote::escaped("arn:aws:iam::1:role/x") == "arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fx");
  CHECK(mb::io::remote::escaped("\xc3\xa9") == "%C3%A9");  // bytes, not characters
  CHECK(mb::io::remote::escaped(std::string_view("xyz", 0)) == "");
}
