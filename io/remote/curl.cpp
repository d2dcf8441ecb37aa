#include "io/remote/curl.hpp"

#include <fmt/format.h>

#include <cctype>
#include <climits>
#include <new>
#include <mutex>

#include "core/error.hpp"
#include "io/run/guard.hpp"

namespace mb::io::remote {
namespace {

// A stop signal ends a transfer at once, not at its timeout.
int on_progress(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) { return run::interrupted() ? 1 : 0; }

std::string decode_entities(std::string text) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&quot;", '"'}, {"&apos;", '\''}, {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}};
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    bool replaced = false;
    for (const auto& [entity, c] : kEntities)
      if (std::string_view(text).substr(i).starts_with(entity)) {
        out += c, i += entity.size(), replaced = true;
        break;
      }
    if (!replaced) out += text[i++];
  }
  return out;
}

}  // namespace

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("cannot initialize libcurl");
  });
}

void configure_handle(CURL* curl, const RemoteAddress& address, const Settings& settings, char* error) {
  curl_easy_setopt(curl, CURLOPT_URL, address.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: threads read digests
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, static_cast<long>(settings.timeout_seconds));
  // A stall is under min_rate for timeout_seconds, however long a large transfer takes in all.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(settings.min_rate));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(settings.timeout_seconds));
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "microbatch");
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  if (!settings.ca_bundle.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, settings.ca_bundle.c_str());
}

curl_slist* sign(CURL* curl, const RemoteAddress& address) {
  if (!address.signing) return nullptr;
  const Signing& signing = *address.signing;
  // Asked at every request: temporary credentials are fetched again before they expire.
  const std::optional<Credentials> c = signing.credentials->current();
  if (!c) return nullptr;
  const std::string provider = "aws:amz:" + signing.region + ":" + signing.service;
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, provider.c_str());  // libcurl copies string options
  curl_easy_setopt(curl, CURLOPT_USERNAME, c->key_id.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD, c->secret.c_str());
  curl_slist* headers = nullptr;
  if (signing.service == "s3")  // S3 alone takes an unsigned payload; libcurl hashes other services' bodies
    headers = curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  if (!c->token.empty()) headers = curl_slist_append(headers, ("x-amz-security-token: " + c->token).c_str());
  return headers;
}

std::string escaped(std::string_view text) {
  if (text.empty()) return "";  // a length of 0 would have libcurl take strlen(text.data())
  if (text.size() > static_cast<std::size_t>(INT_MAX)) throw Error("a text too long to percent-encode");
  init_curl_once();
  char* out = curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  if (out == nullptr) throw std::bad_alloc();  // libcurl's only failure: no memory
  std::string result(out);
  curl_free(out);
  return result;
}

bool header_is(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  return true;
}

std::string header_value(std::string_view line) {
  std::string_view v = line.substr(line.find(':') + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
  return std::string(v);
}

std::string xml_element(const std::string& body, const std::string& tag) {
  const auto open = body.find("<" + tag + ">");
  if (open == std::string::npos) return "";
  const auto from = open + tag.size() + 2;
  const auto close = body.find("</" + tag + ">", from);
  return close == std::string::npos ? "" : decode_entities(body.substr(from, close - from));
}

std::string refusal_hint(const RemoteAddress& address) {
  if (!address.signing) return is_s3(address.name) ? " (the request was sent unsigned, as --no-sign-request asks)" : "";
  std::string source = "the credential chain";
  try {
    if (const auto c = address.signing->credentials->current()) source = c->source;
  } catch (const Error&) {  // the credentials failed meanwhile: the refusal is still what to report
  }
  return fmt::format(" (signed with the credentials from {}, for region {}: check them)", source,
                     address.signing->region);
}

Failure http_failure(long status, const std::string& status_line, const std::string& error_body,
                     const RemoteAddress& address) {
  std::string what = fmt::format("HTTP {}", status_line.empty() ? std::to_string(status) : status_line);
  const std::string code = xml_element(error_body, "Code"), message = xml_element(error_body, "Message");
  if (!code.empty()) what += fmt::format(" ({}{}{})", code, message.empty() ? "" : ": ", message);
  if (status == 412) what += ": the object changed while it was being read";
  if (status == 403 || status == 401) what += refusal_hint(address);
  return {.what = what,
          .transient = status >= 500 || status == 429,
          .missing = status == 404,
          .changed = status == 412};
}

Failure curl_failure(CURLcode code, const char* detail, std::uint64_t received, std::uint64_t expected,
                     const Settings& settings) {
  const std::string d = *detail ? detail : curl_easy_strerror(code);
  switch (code) {
    case CURLE_COULDNT_CONNECT:
      return {fmt::format("cannot connect ({})", d), true};
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return {fmt::format("cannot connect: unknown host ({})", d), false};
    case CURLE_OPERATION_TIMEDOUT:
      return {fmt::format("timed out: the network stalled (under {} bytes/s for {} s; MICROBATCH_HTTP_MIN_RATE, "
                          "MICROBATCH_HTTP_TIMEOUT)",
                          settings.min_rate, settings.timeout_seconds),
              true};
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
      return {fmt::format("the connection closed after {} of {} bytes ({})", received, expected, d), true};
    case CURLE_PEER_FAILED_VERIFICATION:
      return {fmt::format("the server's certificate is not trusted ({}); give its CA in AWS_CA_BUNDLE", d), false};
    default:
      return {fmt::format("request failed ({})", d), false};
  }
}

}  // namespace mb::io::remote
