#include "io/remote/listing.hpp"

#include <fmt/format.h>

#include <charconv>

#include "core/error.hpp"
#include "core/multipart.hpp"
#include "io/remote/curl.hpp"

namespace mb::io::remote {
namespace {

// An element's number, or an mb::Error naming the listing.
std::uint64_t size_of(const std::string& text, const std::string& where) {
  std::uint64_t n = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);  // digits only: no sign
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw Error(fmt::format("{}: the store's listing gives the size \"{}\"", where, text), ErrorKind::Environment);
  return n;
}

}  // namespace

ListPage parse_list_page(const std::string& xml) {
  // A proxy's error page or an empty body is no listing, and must not pass for an empty prefix.
  if (xml.find("<ListBucketResult") == std::string::npos)
    throw Error("the store's answer to a listing is not a ListBucketResult", ErrorKind::Environment);
  ListPage page;
  const std::string open = "<Contents>", close = "</Contents>";
  for (auto at = xml.find(open); at != std::string::npos; at = xml.find(open, at)) {
    const auto end = xml.find(close, at);
    if (end == std::string::npos) throw Error("the store's listing is cut short", ErrorKind::Environment);
    const std::string entry = xml.substr(at, end - at);
    const std::string key = xml_element(entry, "Key");
    page.objects.push_back({key, size_of(xml_element(entry, "Size"), key), xml_element(entry, "LastModified")});
    at = end + close.size();
  }
  if (xml_element(xml, "IsTruncated") == "true") {
    page.next = xml_element(xml, "NextContinuationToken");
    if (page.next.empty())
      throw Error("the store's listing is truncated but gives no continuation token", ErrorKind::Environment);
  }
  return page;
}

std::vector<Listed> list_prefix(Client& client, const S3Listing& where) {
  std::vector<Listed> found;
  std::string token;
  do {
    // Signature V4 signs the query as sent: its keys in order.
    const std::string query = fmt::format("{}delimiter=%2F&list-type=2&prefix={}",
                                          token.empty() ? "" : "continuation-token=" + query_escape(token) + "&",
                                          query_escape(where.prefix));
    const std::string body = client.send(where.bucket, {.method = "GET", .query = query}).body;
    ListPage page;
    try {
      page = parse_list_page(body);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", shown_name(where.bucket.name), e.what()), e.kind());
    }
    for (auto& o : page.objects)
      if (o.name.starts_with(where.prefix) && o.name.size() > where.prefix.size())
        found.push_back({o.name.substr(where.prefix.size()), o.size, o.modified});
    token = page.next;
  } while (!token.empty());
  return found;
}

}  // namespace mb::io::remote
