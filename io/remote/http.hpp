#pragma once
// One remote object read by byte ranges (HTTP Range requests over libcurl,
// one kept-alive connection per object), signed with AWS Signature V4 when
// its address says so. Every failure is an mb::Error of one line naming the
// object (shown_name: no query, no credentials) and what happened; faults
// that a retry can cure (a dropped or truncated response, a stall, 5xx,
// 429) are retried before that. Servers that ignore Range requests are
// read whole (see Served).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/remote/local_copy.hpp"
#include "io/remote/settings.hpp"

namespace mb::io::remote {

// The object does not exist (HTTP 404).
class Missing : public Error {
 public:
  using Error::Error;
};


// Which version of an object a first request found. Every later answer must
// show the same: its size (Content-Range's total), the ETag as sent (weak or
// strong) when there was one, Last-Modified when there was one. A server
// that ignores If-Match, or has only weak validators, is still caught when
// any of them moves; one with none is caught only when the size does.
struct Version {
  std::uint64_t size = 0;
  std::string etag;           // as sent, weak ones (W/"...") too, or empty
  std::int64_t modified = 0;  // Last-Modified, seconds since the epoch (0: none given)
  // The ETag every read asks If-Match: a strong one only, since a weak ETag does not name the bytes.
  std::string strong_etag() const { return etag.starts_with("W/") ? std::string() : etag; }
};

// What the first request found: the object's version and how its server
// answers. A server that ignores Range sends the whole file (HTTP 200):
// one larger than the first request is then kept in a LocalCopy, which
// every later read is served from; a smaller one is read again whole
// whenever bytes of it are needed (it fits in the first request).
struct Served {
  Version version;
  bool ranges = true;  // the server answers Range requests
  std::shared_ptr<const LocalCopy> copy;
};

class Object {
 public:
  // Fetches the object's first `head` bytes (fewer when it is smaller),
  // which tells its size; later reads require the same version of it
  // (If-Match its ETag), so an object replaced while being read is an error.
  Object(const RemoteAddress& address, const Settings& settings, std::uint64_t head);
  // Without a request: what an earlier Object found (every read must show
  // the same version).
  Object(const RemoteAddress& address, const Settings& settings, const Served& known);
  ~Object();
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  std::uint64_t size() const;
  // The bytes the first request fetched: [0, head.size()).
  const std::vector<char>& head() const;
  // Drops the head's copy once the caller has kept what it needs of it.
  void release_head();
  Version version() const;
  const Served& served() const;
  // Reads exactly [offset, offset + n) (within size()) into `out`.
  void read(std::uint64_t offset, std::uint64_t n, char* out);
  const std::string& shown() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The whole (small) object as text, for manifests: at most `limit` bytes.
std::string fetch_text(const RemoteAddress& address, const Settings& settings, std::uint64_t limit);

}  // namespace mb::io::remote
