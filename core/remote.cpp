#include "core/remote.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.hpp"

namespace mb {
namespace {

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), s.begin(), [](char p, char c) {
           return std::tolower(static_cast<unsigned char>(c)) == p;
         });
}

std::string variable(const Environment& env, const char* name) {
  const char* v = env(name);
  return v ? std::string(v) : std::string();
}

// Percent-encodes an S3 key the way Signature V4's canonical URI has it:
// everything but unreserved characters and "/".
std::string encode_key(std::string_view key) {
  std::string out;
  for (const unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

// Bucket names as S3 allows them (3-63 of a-z, 0-9, '.', '-').
bool valid_bucket(std::string_view b) {
  return b.size() >= 3 && b.size() <= 63 && std::all_of(b.begin(), b.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
         });
}

// The signing of settings.aws(), whose credentials are looked up now: none
// when it answers anonymous requests.
std::optional<Signing> signing_from(const Settings& settings) {
  const auto& aws = settings.aws();
  if (!aws) throw Error("internal: s3:// names need a credential source in the settings");
  if (!aws->current()) return std::nullopt;
  return Signing{aws->region(), "s3", aws};
}

std::string endpoint_from(const Environment& env) {
  std::string e = variable(env, "AWS_ENDPOINT_URL_S3");
  const char* which = "AWS_ENDPOINT_URL_S3";
  if (e.empty()) e = variable(env, "AWS_ENDPOINT_URL"), which = "AWS_ENDPOINT_URL";
  if (e.empty()) return e;
  if (!starts_with_nocase(e, "http://") && !starts_with_nocase(e, "https://"))
    throw usage_error(fmt::format("{}: \"{}\" is not an http:// or https:// URL", which, shown_name(e)));
  while (e.ends_with('/')) e.pop_back();
  return e;
}

// s3://BUCKET/KEY -> (BUCKET, KEY).
std::pair<std::string_view, std::string_view> bucket_and_key(std::string_view name) {
  const std::string_view rest = name.substr(5);
  const auto slash = rest.find('/');
  return {rest.substr(0, slash), slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1)};
}

// The URL of `key` (percent-encoded) in `bucket`: path-style at an endpoint, else AWS's. An empty key is the
// bucket itself, as ListObjectsV2 requests it.
std::string s3_url(std::string_view bucket, std::string_view key, const Settings& settings) {
  const std::string endpoint = endpoint_from(settings.environment());
  const std::string region = settings.aws()->region(), path = key.empty() ? "" : "/" + encode_key(key);
  if (!endpoint.empty()) return fmt::format("{}/{}{}", endpoint, bucket, path);
  if (bucket.find('.') != std::string_view::npos)  // a dotted bucket breaks the TLS wildcard
    return fmt::format("https://s3.{}.amazonaws.com/{}{}", region, bucket, path);
  return fmt::format("https://{}.s3.{}.amazonaws.com{}", bucket, region, path.empty() ? "/" : path);
}

RemoteAddress resolve_s3(std::string_view name, const Settings& settings) {
  const auto [bucket, key] = bucket_and_key(name);
  if (!valid_bucket(bucket) || key.empty() || key.ends_with('/'))
    throw usage_error(fmt::format("{}: not an S3 object name (expected s3://BUCKET/KEY)", shown_name(name)));
  auto signing = signing_from(settings);
  return RemoteAddress{std::string(name), s3_url(bucket, key, settings), std::move(signing), settings.environment(),
                       settings.s3()};
}

}  // namespace

std::optional<std::string> url_scheme(std::string_view name) {
  const auto end = name.find("://");
  if (end == std::string_view::npos || end == 0 || !std::isalpha(static_cast<unsigned char>(name[0])))
    return std::nullopt;
  std::string scheme;
  for (const unsigned char c : name.substr(0, end)) {
    if (!std::isalnum(c) && c != '+' && c != '-' && c != '.') return std::nullopt;
    scheme += static_cast<char>(std::tolower(c));
  }
  return scheme;
}

void check_place(std::string_view name, std::string_view option) {
  const auto scheme = url_scheme(name);
  if (!scheme || is_remote(name)) return;
  throw usage_error(fmt::format("{}{}: microbatch does not read or write {}:// URLs; it takes s3://, http:// and "
                                "https:// (read-only) URLs, or a local path",
                                option.empty() ? "" : std::string(option) + ": ", shown_name(name), *scheme));
}

bool is_s3(std::string_view name) { return starts_with_nocase(name, "s3://"); }

bool is_remote(std::string_view name) {
  return starts_with_nocase(name, "s3://") || starts_with_nocase(name, "http://") ||
         starts_with_nocase(name, "https://");
}

RemoteAddress resolve_remote(std::string_view name, const Settings& settings) {
  if (starts_with_nocase(name, "s3://")) return resolve_s3(name, settings);
  const auto host = name.find("://") + 3;
  if (host >= name.size() || name[host] == '/')
    throw usage_error(fmt::format("{}: not a URL with a host", shown_name(name)));
  return RemoteAddress{std::string(name), std::string(name), std::nullopt, settings.environment()};
}

S3Listing resolve_listing(std::string_view name, const Settings& settings) {
  if (!starts_with_nocase(name, "s3://"))
    throw usage_error(fmt::format("{}: not an S3 prefix (expected s3://BUCKET/PREFIX/)", shown_name(name)));
  const auto [bucket, key] = bucket_and_key(name);
  if (!valid_bucket(bucket) || (!key.empty() && !key.ends_with('/')))
    throw usage_error(fmt::format("{}: not an S3 prefix (expected s3://BUCKET/PREFIX/)", shown_name(name)));
  auto signing = signing_from(settings);
  return {RemoteAddress{std::string(name), s3_url(bucket, "", settings), std::move(signing), settings.environment(),
                        settings.s3()},
          std::string(key)};
}

std::string shown_name(std::string_view name) {
  std::string out(name);
  if (!is_remote(name)) return out;  // a local file's name may hold a '?'; and scrub_urls passes other schemes
  if (const auto q = out.find('?'); q != std::string::npos) out = out.substr(0, q) + "?...";
  const auto scheme = out.find("://");
  if (scheme == std::string::npos) return out;
  const auto host_end = out.find('/', scheme + 3);
  const auto at = out.rfind('@', host_end == std::string::npos ? out.size() : host_end);
  if (at != std::string::npos && at > scheme) out = out.substr(0, scheme + 3) + "...@" + out.substr(at + 1);
  return out;
}

std::string scrub_urls(std::string_view text) {
  std::string out;
  std::size_t done = 0;
  for (std::size_t at = text.find("://"); at != std::string_view::npos; at = text.find("://", at + 3)) {
    std::size_t begin = at;
    while (begin > done && std::isalnum(static_cast<unsigned char>(text[begin - 1]))) --begin;
    std::size_t end = text.find_first_of(" \t\n'\"", at);
    if (end == std::string_view::npos) end = text.size();
    while (end > at + 3 && (text[end - 1] == ':' || text[end - 1] == ',' || text[end - 1] == ')')) --end;
    out += text.substr(done, begin - done);
    out += shown_name(text.substr(begin, end - begin));
    done = end;
    at = std::max(at, end > 3 ? end - 3 : 0);
  }
  return out + std::string(text.substr(done));
}

std::string sibling(std::string_view name, std::string_view file) {
  std::string_view base = name.substr(0, name.find('?'));
  return std::string(base.substr(0, base.rfind('/') + 1)) + std::string(file);
}

std::optional<std::string> remote_manifest_name(std::string_view name, std::string_view manifest) {
  const std::string_view base = name.substr(0, name.find('?'));
  if (base.ends_with(manifest) && base.size() > manifest.size() && base[base.size() - manifest.size() - 1] == '/')
    return std::string(name);
  if (base.ends_with('/')) return std::string(base) + std::string(manifest);
  return std::nullopt;
}

}  // namespace mb
