// ListObjectsV2 answers read page by page: keys (entities decoded) with
// their sizes, the continuation token while the listing is truncated, and
// answers that cannot be read refused rather than taken as fewer objects.
#include <doctest/doctest.h>

#include <string>

#include "core/error.hpp"
#include "io/remote/listing.hpp"

namespace {

std::string page(const std::string& contents, const std::string& tail) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>bkt</Name><Prefix>mb/</Prefix>" +
         contents + tail + "</ListBucketResult>";
}

std::string object(const std::string& key, const std::string& size) {
  return "<Contents><Key>" + key + "</Key><LastModified>2026-12-04T00:00:00.000Z</LastModified>"
         "<ETag>&quot;0f&quot;</ETag><Size>" + size + "</Size><StorageClass>STANDARD</StorageClass></Contents>";
}

}  // namespace

TEST_CASE("listing: a last page gives its objects and no token") {
  const auto p = mb::io::remote::parse_list_page(
      page(object("mb/manifest.json", "812") + object("mb/a&amp;b.h5", "0"),
           "<CommonPrefixes><Prefix>mb/sub/</Prefix></CommonPrefixes><IsTruncated>false</IsTruncated>"));
  REQUIRE(p.objects.size() == 2);
  CHECK(p.objects[0].name == "mb/manifest.json");
  CHECK(p.objects[0].size == 812);
  CHECK(p.objects[1].name == "mb/a&b.h5");
  CHECK(p.objects[1].size == 0);
  CHECK(p.next.empty());
}

TEST_CASE("listing: a truncated page gives the token of the next") {
  const auto p = mb::io::remote::parse_list_page(page(
      object("mb/x.h5", "18446744073709551615"),
      "<IsTruncated>true</IsTruncated><NextContinuationToken>1a/b+c=</NextContinuationToken>"));
  CHECK(p.objects.at(0).size == 18446744073709551615ull);
  CHECK(p.next == "1a/b+c=");
  CHECK(mb::io::remote::parse_list_page(page("", "<IsTruncated>false</IsTruncated>")).objects.empty());
}

TEST_CASE("listing: answers that cannot be read are refused") {
  using mb::io::remote::parse_list_page;
  CHECK_THROWS_AS(parse_list_page(page("", "<IsTruncated>true</IsTruncated>")), mb::Error);  // no token
  CHECK_THROWS_AS(parse_list_page(page(object("mb/x.h5", "12x"), "")), mb::Error);
  CHECK_THROWS_AS(parse_list_page(page(object("mb/x.h5", ""), "")), mb::Error);
  CHECK_THROWS_AS(parse_list_page(page(object("mb/x.h5", "-1"), "")), mb::Error);
  CHECK_THROWS_AS(parse_list_page("<ListBucketResult><Contents><Key>mb/x.h5</Key>"), mb::Error);  // cut short
  CHECK_THROWS_AS(parse_list_page(""), mb::Error);  // no listing: not an empty prefix
  CHECK_THROWS_AS(parse_list_page("<html><body>502 Bad Gateway</body></html>"), mb::Error);
}
