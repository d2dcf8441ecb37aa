#pragma once
// Requests that write to an S3 store (PUT, POST, DELETE) or ask about one
// object (GET, HEAD), one libcurl handle kept alive across them. Faults a
// retry can cure (a dropped connection, 5xx, 429) are retried with the same
// backoff as reads; what remains is an mb::Error of one line naming the
// object as shown.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/remote.hpp"
#include "io/remote/settings.hpp"

namespace mb::io::remote {

// One request. The body is `text`, or bytes [offset, offset + length) of the
// open file `fd` (length 0 and fd -1: none).
struct Call {
  std::string method = "GET";  // GET, HEAD, PUT, POST or DELETE
  std::string query{};         // appended after "?": sorted and escaped (Signature V4 signs it as given)
  std::vector<std::string> headers{};
  std::string text{};
  int fd = -1;
  std::uint64_t offset = 0, length = 0;
  bool absent_ok = false;  // a 404 is answered, not thrown
  bool taken_ok = false;   // a 412 (If-None-Match: * over a key that exists) is answered, not thrown
  // A clean-up (a multipart upload's abort, or its creation, whose answer
  // the abort needs): sent, and seen through, even after a stop signal or
  // the client's cancel, which end every other request at once.
  bool cleanup = false;
};

// What an answer's body keeps: documents (XML, manifests), not data.
inline constexpr std::size_t kBodyLimit = 64u << 20;

struct Answer {
  long status = 0;
  std::string etag;         // as sent
  // The ETag is the MD5 of the bytes (S3: unless the object is encrypted
  // with SSE-KMS or SSE-C, as the answer's x-amz-server-side-encryption
  // headers say, or made of parts).
  bool etag_is_md5 = true;
  std::uint64_t length = 0;  // Content-Length
  std::string body;          // at most kBodyLimit bytes
  bool cut = false;          // the body was longer, and is cut there
};

class Client {
 public:
  // `cancel`, when given and set, ends a transfer at once (the uploads are abandoned).
  explicit Client(const Settings& settings, const std::atomic<bool>* cancel = nullptr);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  Answer send(const RemoteAddress& address, const Call& call);

 private:
  struct State;
  State* s_;
};

}  // namespace mb::io::remote
