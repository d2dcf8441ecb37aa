#include "io/remote/http.hpp"

#include <curl/curl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "core/error.hpp"
#include "core/units.hpp"
#include "io/remote/curl.hpp"
#include "io/run/guard.hpp"

namespace mb::io::remote {
namespace {

// What an object cost, for the debug line when it is closed.
// One response, as the callbacks see it. `out` receives bytes [skip, skip +
// capacity) of the body: all of a 206's, those of the range asked for when
// a server that ignores Range sends the whole file (a 200).
struct Response {
  char* out = nullptr;
  std::uint64_t capacity = 0, got = 0, skip = 0;
  std::uint64_t body = 0;    // bytes of the body so far
  std::uint64_t length = 0;  // Content-Length, when given
  bool may_be_whole = false;  // a 200 is expected: the first request, or a server known to ignore Range
  bool keeps_whole = false;   // the first request: a whole body larger than `out` goes into a LocalCopy
  bool overflow = false;      // more bytes than asked for: the server ignored the Range
  std::shared_ptr<LocalCopy> copy;
  std::exception_ptr failed;  // the copy's failure (a full disk), thrown once the transfer has stopped
  std::chrono::steady_clock::time_point shown_at;
  const std::string* shown = nullptr;
  const std::string* spool = nullptr;  // where a LocalCopy goes
  std::string status_line, content_range, etag, last_modified, error_body;
  CURL* curl = nullptr;

  long status() const {
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    return code;
  }
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& r = *static_cast<Response*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect or 100 Continue)
    // "HTTP/1.1 404 Not Found" -> "404 Not Found"
    const auto space = line.find(' ');
    r.status_line = space == std::string_view::npos ? "" : header_value("s:" + std::string(line.substr(space)));
    r.content_range.clear(), r.etag.clear(), r.last_modified.clear(), r.length = 0;
  } else if (header_is(line, "content-length")) {
    r.length = std::strtoull(header_value(line).c_str(), nullptr, 10);
  } else if (header_is(line, "content-range")) {
    r.content_range = header_value(line);
  } else if (header_is(line, "etag")) {
    r.etag = header_value(line);
  } else if (header_is(line, "last-modified")) {
    r.last_modified = header_value(line);
  }
  return size * count;
}

// How far a whole file's download into its LocalCopy has got, every few seconds.
constexpr auto kDownloadReport = std::chrono::seconds(10);

void report_download(Response& r) {
  const auto now = std::chrono::steady_clock::now();
  if (now - r.shown_at < kDownloadReport) return;
  r.shown_at = now;
  const std::string of = r.length ? fmt::format(" of {}", byte_text(static_cast<double>(r.length))) : "";
  spdlog::info("{}: {}{} read into the temporary copy", *r.shown, byte_text(static_cast<double>(r.body)), of);
}

// The first answer is the whole file and larger than the head: it goes on
// into a LocalCopy (the head's bytes first). False, with the failure kept,
// when the copy cannot be made or written.
bool keep_whole(Response& r, const char* data, std::size_t n) {
  try {
    if (!r.copy && r.body + n > r.capacity) {
      r.copy = std::make_shared<LocalCopy>(*r.shown, *r.spool);
      const std::string size = r.length ? fmt::format(" ({})", byte_text(static_cast<double>(r.length))) : "";
      spdlog::info("{}: the server answers range requests with the whole file (HTTP 200); reading it{} into a "
                   "temporary copy in {}",
                   *r.shown, size, r.copy->directory());
      r.copy->append(r.out, r.body);
      r.shown_at = std::chrono::steady_clock::now();
    }
    if (!r.copy) return true;
    r.copy->append(data, n);
    report_download(r);
    return true;
  } catch (...) {
    r.failed = std::current_exception();
    return false;
  }
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& r = *static_cast<Response*>(user);
  const std::size_t n = size * count;
  run::note_progress();
  if (r.status() >= 300) {
    r.error_body.append(data, std::min(n, kErrorBodyLimit - std::min(kErrorBodyLimit, r.error_body.size())));
    return n;
  }
  const bool whole = r.status() == 200;
  if ((!whole || !r.may_be_whole) && r.body + n > r.capacity) {
    r.overflow = true;
    return 0;  // aborts the transfer
  }
  if (whole && r.keeps_whole && !keep_whole(r, data, n)) return 0;
  // The part of these bytes in [skip, skip + capacity) of a whole body, or in [0, capacity) of a range's.
  const std::uint64_t skip = whole ? r.skip : 0;
  const std::uint64_t at = r.body, lo = std::max(at, skip), hi = std::min(at + n, skip + r.capacity);
  if (lo < hi) std::memcpy(r.out + (lo - skip), data + (lo - at), hi - lo);
  r.got += lo < hi ? hi - lo : 0;
  r.body += n;
  return n;
}

struct ContentRange {
  std::uint64_t first = 0, last = 0, total = 0;
  bool whole_unknown = false;  // "bytes */TOTAL" (416)
};

std::optional<ContentRange> parse_content_range(const std::string& v) {
  ContentRange c;
  unsigned long long a = 0, b = 0, t = 0;
  if (std::sscanf(v.c_str(), "bytes %llu-%llu/%llu", &a, &b, &t) == 3 && a <= b) {
    c.first = a, c.last = b, c.total = t;
    return c;
  }
  if (std::sscanf(v.c_str(), "bytes */%llu", &t) == 1) {
    c.total = t, c.whole_unknown = true;
    return c;
  }
  return std::nullopt;
}

std::string quoted_or_none(const std::string& v) { return v.empty() ? "none" : "\"" + v + "\""; }

// How an answer's version differs from the first answer's, or "" when it
// does not (see Version).
std::string difference(const Version& first, const Response& r, std::uint64_t total) {
  if (total != first.size) return fmt::format("{} bytes, now {}", first.size, total);
  if (!first.etag.empty() && r.etag != first.etag)
    return fmt::format("ETag {}, now {}", quoted_or_none(first.etag), quoted_or_none(r.etag));
  if (first.modified != 0 && (r.last_modified.empty() || curl_getdate(r.last_modified.c_str(), nullptr) != first.modified))
    return fmt::format("Last-Modified {}, now {}", first.modified, quoted_or_none(r.last_modified));
  return "";
}

// A whole number in [1, max] from variable `name`, or `fallback` when it is unset.
unsigned whole_from(const Environment& env, const char* name, const char* what, unsigned long max, unsigned fallback) {
  const char* t = env(name);
  if (!t || !*t) return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(t, &end, 10);
  if (*end || errno || !std::isdigit(static_cast<unsigned char>(*t)) || v == 0 || v > max)
    throw usage_error(fmt::format("{}: \"{}\" is not a number of {} (1 to {})", name, t, what, max));
  return static_cast<unsigned>(v);
}

}  // namespace

Settings settings_from(const Environment& env) {
  Settings s;
  s.timeout_seconds = whole_from(env, "MICROBATCH_HTTP_TIMEOUT", "seconds", 86400, s.timeout_seconds);
  s.min_rate = whole_from(env, "MICROBATCH_HTTP_MIN_RATE", "bytes per second", 1ul << 30, s.min_rate);
  if (const char* ca = env("AWS_CA_BUNDLE"); ca && *ca) s.ca_bundle = ca;
  s.temporary_directory = temporary_directory(env);
  return s;
}

struct Object::State {
  RemoteAddress address;
  Settings settings;
  std::string shown;
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  char error[CURL_ERROR_SIZE] = {};
  Served served;  // by the first answer
  std::vector<char> head;
  struct {
    std::uint64_t requests = 0, bytes = 0;
  } traffic;

  State(const RemoteAddress& a, const Settings& s) : address(a), settings(s), shown(shown_name(a.name)) {
    init_curl_once();
    configure();
  }
  // Here, not in ~Object: a constructor whose first fetch throws runs no ~Object (LSan saw the handle leak).
  ~State() {
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
  }
  void configure();
  void set_headers(bool with_etag);
  // One request for [offset, offset + n); a failure, or none.
  std::optional<Failure> attempt(std::uint64_t offset, std::uint64_t n, char* out, bool first);
  void fetch(std::uint64_t offset, std::uint64_t n, char* out, bool first);
};

void Object::State::configure() {
  curl = curl_easy_init();
  if (!curl) throw Error(shown + ": cannot create a libcurl handle");
  configure_handle(curl, address, settings, error);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
  // Fewer, larger socket reads for the large ranges data is read in (default 16 KiB).
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L << 10);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
}

void Object::State::set_headers(bool with_etag) {
  curl_slist_free_all(headers);
  headers = nullptr;
  headers = sign(curl, address);
  for (const auto& h : address.s3.request_headers()) headers = curl_slist_append(headers, h.c_str());
  if (const std::string etag = served.version.strong_etag(); with_etag && !etag.empty())
    headers = curl_slist_append(headers, ("If-Match: " + etag).c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
}

std::optional<Failure> Object::State::attempt(std::uint64_t offset, std::uint64_t n, char* out, bool first) {
  Response r;
  r.curl = curl, r.out = out, r.capacity = n, r.shown = &shown, r.spool = &settings.temporary_directory;
  r.may_be_whole = first || !served.ranges, r.keeps_whole = first, r.skip = offset;
  set_headers(!first);  // signed afresh: credentials may have been refreshed since the last request
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
  const std::string range = fmt::format("{}-{}", offset, offset + n - 1);
  curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  error[0] = '\0';
  ++traffic.requests;
  CURLcode code;
  {
    // The request's own limits (MICROBATCH_HTTP_TIMEOUT, MICROBATCH_HTTP_MIN_RATE) tell a network stall; the
    // watchdog is for the library.
    const run::NotStalled waiting;
    code = curl_easy_perform(curl);
  }
  traffic.bytes += r.body;
  if (r.failed) std::rethrow_exception(r.failed);
  const long status = r.status();
  if (r.overflow && status == 206)
    return Failure{fmt::format("answered more than the bytes {} asked for", range), false};
  if (r.overflow)  // a whole file from a server that answered the first request with a range
    return Failure{"the server stopped answering range requests (HTTP 200 to a Range request)", false};
  if (code == CURLE_ABORTED_BY_CALLBACK) run::throw_if_interrupted();
  if (code != CURLE_OK) return curl_failure(code, error, r.body, status == 200 && r.length ? r.length : n, settings);
  if (status == 416 && first) {  // an empty object
    served.version.size = 0;
    return std::nullopt;
  }
  if (status >= 300 || status < 200) return http_failure(status, r.status_line, r.error_body, address);
  std::uint64_t total = r.body;  // a 200: the whole object, whatever the Range asked
  if (status != 200) {
    const auto c = parse_content_range(r.content_range);
    if (!c || c->whole_unknown || c->first != offset || (!first && c->last != offset + n - 1) || c->last >= c->total)
      return Failure{fmt::format("answered bytes \"{}\" to a request for bytes {}", r.content_range, range), false};
    if (r.got != c->last - c->first + 1)
      return Failure{fmt::format("the connection closed after {} of {} bytes", r.got, c->last - c->first + 1), true};
    total = c->total;
  }
  if (first) {
    served.version.size = total;
    served.version.etag = r.etag;
    if (!r.last_modified.empty()) served.version.modified = curl_getdate(r.last_modified.c_str(), nullptr);
    served.ranges = status != 200;
    served.copy = std::move(r.copy);
    head.resize(r.got);
  } else if (const std::string d = difference(served.version, r, total); !d.empty()) {
    // A server that ignores If-Match (or has no strong ETag) answers with the new version.
    return Failure{.what = fmt::format("changed while it was read ({})", d), .changed = true};
  }
  return std::nullopt;
}

void Object::State::fetch(std::uint64_t offset, std::uint64_t n, char* out, bool first) {
  for (unsigned attempt_no = 1;; ++attempt_no) {
    run::throw_if_interrupted();
    const auto failure = attempt(offset, n, out, first);
    if (!failure) return;
    if (!failure->transient || attempt_no >= settings.attempts) {
      const std::string tries = attempt_no > 1 ? fmt::format(" (after {} attempts)", attempt_no) : "";
      const std::string message = fmt::format("{}: {}{}", shown, failure->what, tries);
      if (failure->missing) throw Missing(message, ErrorKind::Data, {shown, ""});
      // The network failing, or the object replaced meanwhile: a retry may succeed; a 403 or 404 will not.
      const bool retry = failure->transient || failure->changed;
      throw Error(message, retry ? ErrorKind::Environment : ErrorKind::Data, {shown, ""});
    }
    spdlog::debug("{}: {}; trying again", shown, failure->what);
    std::this_thread::sleep_for(std::chrono::milliseconds(100 << (2 * (attempt_no - 1))));
  }
}

Object::Object(const RemoteAddress& address, const Settings& settings, std::uint64_t head)
    : s_(new State(address, settings)) {
  s_->head.resize(std::max<std::uint64_t>(head, 1));
  s_->fetch(0, s_->head.size(), s_->head.data(), true);
}

Object::Object(const RemoteAddress& address, const Settings& settings, const Served& known)
    : s_(new State(address, settings)) {
  s_->served = known;
}

Object::~Object() {
  spdlog::debug("{}: {} requests, {} bytes fetched", s_->shown, s_->traffic.requests, s_->traffic.bytes);
}

std::uint64_t Object::size() const { return s_->served.version.size; }
const std::vector<char>& Object::head() const { return s_->head; }
void Object::release_head() { std::vector<char>().swap(s_->head); }
Version Object::version() const { return s_->served.version; }
const Served& Object::served() const { return s_->served; }
const std::string& Object::shown() const { return s_->shown; }

void Object::read(std::uint64_t offset, std::uint64_t n, char* out) {
  if (n == 0) return;
  if (offset + n > s_->served.version.size || offset + n < offset)
    throw Error(fmt::format("{}: a read of bytes {}-{} past its end ({} bytes)", s_->shown, offset, offset + n - 1,
                            s_->served.version.size));
  if (s_->served.copy)
    s_->served.copy->read(offset, n, out);
  else
    s_->fetch(offset, n, out, false);
}

std::string fetch_text(const RemoteAddress& address, const Settings& settings, std::uint64_t limit) {
  Object object(address, settings, std::min<std::uint64_t>(limit + 1, 1u << 20));
  if (object.size() > limit)
    throw Error(fmt::format("{}: {} bytes, more than the {} expected of it", object.shown(), object.size(), limit));
  std::string text(object.head().begin(), object.head().end());
  const std::uint64_t have = text.size();
  text.resize(object.size());
  object.read(have, object.size() - have, text.data() + have);
  return text;
}

}  // namespace mb::io::remote
