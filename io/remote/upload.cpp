#include "io/remote/upload.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/multipart.hpp"
#include "core/units.hpp"
#include "io/remote/curl.hpp"
#include "io/run/fd.hpp"
#include "io/run/guard.hpp"

namespace mb::io::remote {
namespace {

// `what` and errno's text (a short read: the file shrank, so it changed).
Error file_error(const std::string& what, int error) {
  return Error(fmt::format("{}: {}", what, error ? std::strerror(error) : "it is shorter than it was"),
               error ? kind_of_errno(error) : ErrorKind::Data);
}

// An open local file, closed on every path.
class ReadFile {
 public:
  explicit ReadFile(const std::string& path) : path_(path), fd_(run::open_fd(path, O_RDONLY | O_CLOEXEC)) {
    struct stat st{};
    if (!fd_.valid() || ::fstat(fd_.get(), &st) != 0) throw file_error(path + ": cannot open it to upload", errno);
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  int fd() const { return fd_.get(); }
  std::uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  run::Fd fd_;
  std::uint64_t size_ = 0;
};

// MD5 over bytes fed in order (OpenSSL's EVP: Content-MD5 and ETags are MD5s).
class Md5 {
 public:
  Md5() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_md5(), nullptr) != 1) throw Error("cannot start an MD5 digest");
  }
  void add(const char* data, std::size_t n) { EVP_DigestUpdate(ctx_.get(), data, n); }
  // The digest, raw (16 bytes).
  std::string finish() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_.get(), out, &n);
    return std::string(reinterpret_cast<char*>(out), n);
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

std::string hex_of(const std::string& raw) {
  std::string out;
  for (const char c : raw) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

std::string base64_of(const std::string& raw) {
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(raw.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// The raw MD5 of bytes [offset, offset + n) of `file`, fed to `whole` too.
std::string md5_of_range(const ReadFile& file, std::uint64_t offset, std::uint64_t n, Md5* whole) {
  Md5 md5;
  std::vector<char> buffer(std::min<std::uint64_t>(n, 1u << 20));
  for (std::uint64_t done = 0; done < n;) {
    const std::uint64_t want = std::min<std::uint64_t>(buffer.size(), n - done);
    const ssize_t got =
        run::retry_on_eintr([&] { return ::pread(file.fd(), buffer.data(), want, static_cast<off_t>(offset + done)); });
    if (got <= 0) throw file_error(file.path() + ": cannot read it to upload", got < 0 ? errno : 0);
    md5.add(buffer.data(), static_cast<std::size_t>(got));
    if (whole) whole->add(buffer.data(), static_cast<std::size_t>(got));
    done += static_cast<std::uint64_t>(got);
  }
  return md5.finish();
}

// An ETag that is an MD5 must be `md5_hex`'s (or one of `also`). Under
// SSE-KMS or SSE-C it is not one, though it looks like one: the store
// checked the bytes against their Content-MD5, and that is the check.
void check_etag(const RemoteAddress& address, const std::string& what, const Answer& answer, const std::string& etag,
                const std::string& md5_hex, const std::string& also = "") {
  const std::string got = unquoted(etag);
  if (!answer.etag_is_md5 || got == md5_hex || (!also.empty() && got == also)) return;
  if (!is_md5_etag(got) && got.find('-') == std::string::npos) return;  // not a digest: nothing to check
  throw Error(fmt::format("{}: the store's ETag \"{}\" of {} is not the MD5 {} of the bytes sent",
                          shown_name(address.name), got, what, md5_hex),
              ErrorKind::Environment);
}

void check_size(Client& client, const RemoteAddress& address, std::uint64_t size) {
  const Answer head = client.send(address, {.method = "HEAD"});
  if (head.length != size)
    throw Error(fmt::format("{}: the store holds {} bytes, {} were sent", shown_name(address.name), head.length, size),
                ErrorKind::Environment);
}

Uploaded put_whole(Client& client, const RemoteAddress& address, const ReadFile& file) {
  const std::string md5 = md5_of_range(file, 0, file.size(), nullptr);
  const Answer a = client.send(address, {.method = "PUT",
                                         .headers = {"Content-MD5: " + base64_of(md5)},
                                         .fd = file.fd(),
                                         .length = file.size()});
  check_etag(address, "the object", a, a.etag, hex_of(md5));
  if (!a.etag_is_md5 || !is_md5_etag(unquoted(a.etag))) check_size(client, address, file.size());
  return {file.size(), unquoted(a.etag)};
}

// A multipart upload's id, aborted (best effort) unless completed: after a
// failure, a cancel or a stop signal too, for its parts bill the user until
// it is.
struct OpenUpload {
  Client& client;
  const RemoteAddress& address;
  std::string id;
  bool done = false;
  ~OpenUpload() {
    if (done || id.empty()) return;
    try {
      client.send(address, {.method = "DELETE", .query = "uploadId=" + query_escape(id), .cleanup = true});
    } catch (const std::exception& e) {
      spdlog::debug("{}: the multipart upload could not be aborted: {}", shown_name(address.name), e.what());
    }
  }
};

Uploaded put_parts(Client& client, const RemoteAddress& address, const ReadFile& file,
                   const std::function<void(std::uint64_t)>& sent) {
  OpenUpload upload{client, address, ""};
  // Once asked for, the upload exists on the store whatever becomes of this
  // process: the answer, its id, is awaited even after a stop signal, so that
  // the abort can name it. A stop before the request is not sent at all.
  run::throw_if_interrupted();
  upload.id =
      xml_element(client.send(address, {.method = "POST", .query = "uploads=", .cleanup = true}).body, "UploadId");
  if (upload.id.empty())
    throw Error(fmt::format("{}: the store gave no UploadId for a multipart upload", shown_name(address.name)));
  const std::string id = query_escape(upload.id);
  const std::uint64_t part = part_size(file.size()), count = part_count(file.size());
  Md5 whole;
  std::vector<std::string> etags, md5s;
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t offset = k * part, n = std::min(part, file.size() - offset);
    const std::string md5 = md5_of_range(file, offset, n, &whole);
    // Signature V4 signs the query as sent: its keys in order.
    const Answer a = client.send(address, {.method = "PUT",
                                           .query = fmt::format("partNumber={}&uploadId={}", k + 1, id),
                                           .headers = {"Content-MD5: " + base64_of(md5)},
                                           .fd = file.fd(),
                                           .offset = offset,
                                           .length = n});
    check_etag(address, fmt::format("part {}", k + 1), a, a.etag, hex_of(md5));
    etags.push_back(unquoted(a.etag)), md5s.push_back(hex_of(md5));
    if (sent) sent(n);
  }
  const Answer done = client.send(address, {.method = "POST",
                                            .query = "uploadId=" + id,
                                            .headers = {"Content-Type: application/xml"},
                                            .text = complete_document(etags)});
  // S3 can answer 200 and report the failure in the body.
  if (!xml_element(done.body, "Code").empty())
    throw Error(fmt::format("{}: completing the multipart upload failed: {}", shown_name(address.name),
                            xml_element(done.body, "Message")),
                ErrorKind::Environment);
  upload.done = true;
  const std::string etag = xml_element(done.body, "ETag");
  // S3's ETag is the MD5 of the parts' MD5s; some stores (s3rver) give the whole object's MD5.
  check_etag(address, "the object", done, etag, multipart_etag(md5s, md5_hex), hex_of(whole.finish()));
  check_size(client, address, file.size());
  spdlog::debug("{}: uploaded in {} parts of {}", shown_name(address.name), count,
                byte_text(static_cast<double>(part)));
  return {file.size(), unquoted(etag)};
}

}  // namespace

std::string md5_hex(const std::string& bytes) {
  Md5 md5;
  md5.add(bytes.data(), bytes.size());
  return hex_of(md5.finish());
}

Uploaded put_file(Client& client, const RemoteAddress& address, const std::string& path,
                  const std::function<void(std::uint64_t)>& sent) {
  const ReadFile file(path);
  if (is_multipart(file.size())) return put_parts(client, address, file, sent);
  Uploaded u = put_whole(client, address, file);
  if (sent) sent(u.size);
  return u;
}

Uploaded put_text(Client& client, const RemoteAddress& address, const std::string& text, bool only_new) {
  Md5 md5;
  md5.add(text.data(), text.size());
  const std::string raw = md5.finish();
  std::vector<std::string> headers{"Content-MD5: " + base64_of(raw), "Content-Type: application/json"};
  if (only_new) headers.emplace_back("If-None-Match: *");
  const Answer a = client.send(address, {.method = "PUT", .headers = headers, .text = text, .taken_ok = true});
  if (a.status == 412) {
    if (get_text(client, address) == text) return {text.size(), ""};  // ours: an attempt whose answer was lost
    throw Exists(fmt::format("{}: another run committed it meanwhile (it exists, with other contents)",
                             shown_name(address.name)));
  }
  check_etag(address, "the object", a, a.etag, hex_of(raw));
  return {text.size(), unquoted(a.etag)};
}

void delete_object(Client& client, const RemoteAddress& address) { client.send(address, {.method = "DELETE"}); }

std::optional<std::string> get_text(Client& client, const RemoteAddress& address) {
  Answer a = client.send(address, {.method = "GET", .absent_ok = true});
  if (a.cut)
    throw Error(fmt::format("{}: more than the {} bytes expected of it", shown_name(address.name), kBodyLimit));
  if (a.status != 404) return std::move(a.body);
  if (const std::string code = xml_element(a.body, "Code"); code != "NoSuchKey" && !code.empty())
    throw Error(fmt::format("{}: HTTP 404 ({}: {})", shown_name(address.name), code, xml_element(a.body, "Message")));
  return std::nullopt;
}

}  // namespace mb::io::remote
