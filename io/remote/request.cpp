#include "io/remote/request.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "core/error.hpp"
#include "io/remote/curl.hpp"
#include "io/remote/http.hpp"
#include "io/run/fd.hpp"
#include "io/run/guard.hpp"

namespace mb::io::remote {
namespace {

// One exchange, as the callbacks see it.
struct Exchange {
  const Call* call = nullptr;
  std::uint64_t sent = 0;   // bytes of the body read so far
  int read_errno = 0;       // a failed read of the file
  std::string status_line;
  Answer answer;
  const std::atomic<bool>* cancel = nullptr;
};

std::size_t on_request_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& x = *static_cast<Exchange*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {  // a new response (after 100 Continue)
    const auto space = line.find(' ');
    x.status_line = space == std::string_view::npos ? "" : header_value("s:" + std::string(line.substr(space)));
    x.answer.etag.clear(), x.answer.length = 0, x.answer.etag_is_md5 = true;
  } else if (header_is(line, "x-amz-server-side-encryption")) {
    x.answer.etag_is_md5 = x.answer.etag_is_md5 && !header_value(line).starts_with("aws:kms");
  } else if (header_is(line, "x-amz-server-side-encryption-customer-algorithm")) {
    x.answer.etag_is_md5 = false;
  } else if (header_is(line, "etag")) {
    x.answer.etag = header_value(line);
  } else if (header_is(line, "content-length")) {
    x.answer.length = std::strtoull(header_value(line).c_str(), nullptr, 10);
  }
  return size * count;
}

std::size_t on_request_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& x = *static_cast<Exchange*>(user);
  const std::size_t n = size * count;
  run::note_progress();
  const std::size_t kept = std::min(n, kBodyLimit - std::min(kBodyLimit, x.answer.body.size()));
  x.answer.body.append(data, kept);
  x.answer.cut = x.answer.cut || kept < n;
  return n;
}

// The request body, from the file (pread: every attempt reads it afresh).
std::size_t on_read(char* out, std::size_t size, std::size_t count, void* user) {
  auto& x = *static_cast<Exchange*>(user);
  const Call& c = *x.call;
  const std::uint64_t want = std::min<std::uint64_t>(size * count, c.length - x.sent);
  if (want == 0) return 0;
  const ssize_t n =
      run::retry_on_eintr([&] { return ::pread(c.fd, out, want, static_cast<off_t>(c.offset + x.sent)); });
  if (n <= 0) {
    x.read_errno = n < 0 ? errno : EIO;  // a file shorter than it was: it changed
    return CURL_READFUNC_ABORT;
  }
  x.sent += static_cast<std::uint64_t>(n);
  run::note_progress();
  return static_cast<std::size_t>(n);
}

bool cancelled(const std::atomic<bool>* cancel) { return run::interrupted() || (cancel && cancel->load()); }

// The request's body has gone whole to libcurl (a PUT's, read through our
// callbacks) or onto the wire (a POST's fields, which libcurl sends itself).
bool body_sent(const Exchange& x, curl_off_t upload_total, curl_off_t uploaded) {
  const Call& c = *x.call;
  if (c.method == "POST") return upload_total > 0 && uploaded >= upload_total;
  const std::uint64_t length = c.fd >= 0 ? c.length : c.text.size();
  return c.method == "PUT" && length > 0 && x.sent >= length;
}

// A stop or a cancel ends a request at once, but one whose body is sent:
// the store may still do it after the connection is gone (and after the
// delete that undoes it), so its answer is awaited, within the request's
// time limits.
int on_request_progress(void* user, curl_off_t, curl_off_t, curl_off_t upload_total, curl_off_t uploaded) {
  const auto& x = *static_cast<Exchange*>(user);
  if (x.call->cleanup || body_sent(x, upload_total, uploaded)) return 0;
  return cancelled(x.cancel) ? 1 : 0;
}

void set_method(CURL* curl, const Call& c) {
  if (c.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (c.method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(c.fd >= 0 ? c.length : c.text.size()));
  } else if (c.method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, c.text.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(c.text.size()));
  } else if (c.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, c.method.c_str());
  }
}

// The call's headers, with what every request to the store carries (the
// request payer) and what one that creates an object does (its encryption):
// a whole PUT, and the start of a multipart upload.
std::vector<std::string> request_headers(const RemoteAddress& address, const Call& call) {
  std::vector<std::string> out = address.s3.request_headers();
  const bool creates = (call.method == "PUT" && call.query.empty()) || (call.method == "POST" && call.query == "uploads=");
  if (creates)
    for (auto& h : address.s3.creation_headers()) out.push_back(std::move(h));
  out.insert(out.end(), call.headers.begin(), call.headers.end());
  return out;
}

// What a request is about, for its error: the object, a part or the
// multipart upload of it, or the listing of a prefix.
const char* subject_of(const Call& c) {
  if (c.query.empty()) return "the object";
  if (c.query.find("partNumber=") != std::string::npos) return "a part";
  if (c.query.find("list-type=") != std::string::npos) return "the listing";
  return "the multipart upload";
}

// The body of a PUT of `text` (a manifest).
std::size_t on_read_text(char* out, std::size_t size, std::size_t count, void* user) {
  auto& x = *static_cast<Exchange*>(user);
  const std::string& t = x.call->text;
  const std::size_t n = std::min<std::size_t>(size * count, t.size() - x.sent);
  std::memcpy(out, t.data() + x.sent, n);
  x.sent += n;
  return n;
}

}  // namespace

struct Client::State {
  Settings settings;
  const std::atomic<bool>* cancel = nullptr;
  CURL* curl = nullptr;
  char error[CURL_ERROR_SIZE] = {};

  std::optional<Failure> attempt(const RemoteAddress& address, const Call& call, Answer& out);
};

Client::Client(const Settings& settings, const std::atomic<bool>* cancel) : s_(new State{settings, cancel}) {
  init_curl_once();
  s_->curl = curl_easy_init();
  if (!s_->curl) {
    delete s_;
    throw Error("cannot create a libcurl handle");
  }
}

Client::~Client() {
  curl_easy_cleanup(s_->curl);
  delete s_;
}

std::optional<Failure> Client::State::attempt(const RemoteAddress& address, const Call& call, Answer& out) {
  curl_easy_reset(curl);  // keeps the connection
  RemoteAddress target = address;
  if (!call.query.empty()) target.url += "?" + call.query;
  configure_handle(curl, target, settings, error);
  Exchange x;
  x.call = &call, x.cancel = cancel;
  curl_slist* headers = sign(curl, address);
  for (const auto& h : request_headers(address, call)) headers = curl_slist_append(headers, h.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_request_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &x);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_request_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &x);
  curl_easy_setopt(curl, CURLOPT_READFUNCTION, call.fd >= 0 ? on_read : on_read_text);
  curl_easy_setopt(curl, CURLOPT_READDATA, &x);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_request_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &x);
  set_method(curl, call);
  // File bodies in 1 MiB reads and sends, not libcurl's 64 KiB: fewer system calls for the same bytes.
  if (call.fd >= 0) curl_easy_setopt(curl, CURLOPT_UPLOAD_BUFFERSIZE, 1L << 20);
  error[0] = '\0';
  CURLcode code;
  {
    const run::NotStalled waiting;  // the request's own limits tell a network stall
    code = curl_easy_perform(curl);
  }
  curl_slist_free_all(headers);
  if (x.read_errno)
    throw Error(fmt::format("{}: cannot read the file being uploaded: {}", shown_name(address.name),
                            std::strerror(x.read_errno)));
  if (code == CURLE_ABORTED_BY_CALLBACK) {
    run::throw_if_interrupted();
    throw Error(fmt::format("{}: upload abandoned", shown_name(address.name)), ErrorKind::Environment);
  }
  const std::uint64_t expected = call.fd >= 0 ? call.length : call.text.size();
  if (code != CURLE_OK) return curl_failure(code, error, x.sent, expected, settings);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &x.answer.status);
  const long status = x.answer.status;
  if ((status == 404 && call.absent_ok) || (status == 412 && call.taken_ok)) {
    out = std::move(x.answer);
    return std::nullopt;
  }
  if (status < 200 || status >= 300) return http_failure(status, x.status_line, x.answer.body, address);
  out = std::move(x.answer);
  return std::nullopt;
}

Answer Client::send(const RemoteAddress& address, const Call& call) {
  const std::string shown = shown_name(address.name);
  for (unsigned attempt_no = 1;; ++attempt_no) {
    if (!call.cleanup) {
      run::throw_if_interrupted();
      if (cancelled(s_->cancel))
        throw Error(fmt::format("{}: upload abandoned", shown), ErrorKind::Environment);
    }
    Answer answer;
    const auto failure = s_->attempt(address, call, answer);
    if (!failure) return answer;
    if (!failure->transient || attempt_no >= s_->settings.attempts) {
      const std::string tries = attempt_no > 1 ? fmt::format(" (after {} attempts)", attempt_no) : "";
      const std::string message =
          fmt::format("{}: {} of {} failed: {}{}", shown, call.method, subject_of(call), failure->what, tries);
      if (failure->missing) throw Missing(message, ErrorKind::Data, {shown, ""});
      throw Error(message, failure->transient ? ErrorKind::Environment : ErrorKind::Data, {shown, ""});
    }
    spdlog::debug("{}: {} failed: {}; trying again", shown, call.method, failure->what);
    std::this_thread::sleep_for(std::chrono::milliseconds(100 << (2 * (attempt_no - 1))));
  }
}

}  // namespace mb::io::remote
