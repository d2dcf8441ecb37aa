#pragma once
// Objects written to an S3 store: a local file uploaded in one PUT or, from
// 16 MiB on, as a multipart upload (core/multipart.hpp), and checked: each
// request carries Content-MD5, which S3 verifies, and every ETag that is an
// MD5 must be the MD5 of the bytes read (a part's, or the whole object's,
// or S3's MD5-of-MD5s for a multipart upload), and the object's size must
// be the file's. A multipart upload that fails is aborted.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/remote/request.hpp"

namespace mb::io::remote {

struct Uploaded {
  std::uint64_t size = 0;
  std::string etag;
};

// Uploads the local file `path` to `address`; `sent(n)` is told of each
// part's n bytes once confirmed. Throws mb::Error naming the object.
Uploaded put_file(Client& client, const RemoteAddress& address, const std::string& path,
                  const std::function<void(std::uint64_t)>& sent = {});

// The object a put_text with `only_new` was to create exists, with other
// contents: another run committed it meanwhile.
class Exists : public Error {
 public:
  using Error::Error;
};

// Uploads `text` as the whole object; with `only_new`, on condition that
// no object has that key (If-None-Match: *, as S3 and most stores honour
// it: of two runs committing one key, one wins). An object of that key with
// the same text is this run's own (an earlier attempt landed, its answer
// lost); any other throws Exists. A store that ignores the header lets the
// later put replace the earlier.
Uploaded put_text(Client& client, const RemoteAddress& address, const std::string& text, bool only_new = false);

// Deletes the object (S3 answers a missing one with success too).
void delete_object(Client& client, const RemoteAddress& address);

// The object's text, or none when it does not exist (NoSuchKey). A missing
// bucket and every other failure throw.
std::optional<std::string> get_text(Client& client, const RemoteAddress& address);

// The MD5 of `bytes` in hex.
std::string md5_hex(const std::string& bytes);

}  // namespace mb::io::remote
