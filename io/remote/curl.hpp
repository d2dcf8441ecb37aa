#pragma once
// What every request microbatch sends over libcurl shares: the library's
// one-time setup, a handle's common options (timeouts, protocols, CA,
// Signature V4), reading response headers and S3 error documents, and what
// a failed answer means (its message, and whether a retry may cure it).
#include <curl/curl.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/remote.hpp"
#include "io/remote/settings.hpp"

namespace mb::io::remote {

// Enough of an error body to hold an S3 error document.
inline constexpr std::size_t kErrorBodyLimit = 4096;

void init_curl_once();

// Options every handle gets: the address's URL, the settings' timeouts and
// CA, no signals, a stop signal ending the transfer, `error`
// (CURL_ERROR_SIZE bytes) as its error buffer.
void configure_handle(CURL* curl, const RemoteAddress& address, const Settings& settings, char* error);

// Signs the handle's next request as the address says (Signature V4 with
// the credentials its source holds now; nothing for an anonymous one) and
// returns the headers that needs besides libcurl's own: S3's payload hash
// (unsigned: bodies are streamed) and a session token. Called before every
// request, so that refreshed credentials are used. The caller frees the
// list (curl_slist_free_all).
curl_slist* sign(CURL* curl, const RemoteAddress& address);

// `text` percent-encoded by libcurl (every byte but RFC 3986's unreserved
// letters, digits and -._~), for a query or an
// application/x-www-form-urlencoded body.
std::string escaped(std::string_view text);

// A response header line is `name` (lower case): "ETag: x" is "etag".
bool header_is(std::string_view line, std::string_view name);
// Its value, without surrounding blanks.
std::string header_value(std::string_view line);
// The text between <tag> and </tag> of an XML document ("" when absent),
// with the five predefined entities (&quot; &amp; ...) decoded.
std::string xml_element(const std::string& body, const std::string& tag);

// A failed attempt: what to say, and whether another attempt may succeed.
struct Failure {
  std::string what;
  bool transient = false;
  bool missing = false;  // 404
  bool changed = false;  // another version answered: a rerun reads the new one whole
};

// An answer of HTTP `status` ("404 Not Found" as `status_line`) with `error_body`.
// A refusal (401, 403) of a signed request names where its credentials came from.
Failure http_failure(long status, const std::string& status_line, const std::string& error_body,
                     const RemoteAddress& address);
// A transfer libcurl ended with `code` after `received` of `expected` bytes.
Failure curl_failure(CURLcode code, const char* detail, std::uint64_t received, std::uint64_t expected,
                     const Settings& settings);

}  // namespace mb::io::remote
