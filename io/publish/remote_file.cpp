#include "io/publish/remote_file.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "core/units.hpp"
#include "io/remote/curl.hpp"
#include "io/remote/upload.hpp"

namespace mb::io::publish {
namespace {

std::string spool_for(const std::string& url) {
  const char* tmp = std::getenv("TMPDIR");
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  return fmt::format("{}/microbatch-upload-{}-{:x}", tmp && *tmp ? tmp : "/tmp", ::getpid(), stamp & 0xffffff) +
         "/" + std::filesystem::path(url.substr(url.rfind('/') + 1)).string();
}

// Whether the object exists: one byte asked for, so that a missing bucket is told from a missing key.
bool exists(remote::Client& client, const RemoteAddress& address) {
  const remote::Answer a = client.send(address, {.method = "GET", .headers = {"Range: bytes=0-0"}, .absent_ok = true});
  if (a.status != 404) return true;
  if (const std::string code = remote::xml_element(a.body, "Code"); !code.empty() && code != "NoSuchKey")
    throw Error(fmt::format("{}: HTTP 404 ({}: {})", shown_name(address.name), code,
                            remote::xml_element(a.body, "Message")));
  return false;
}

// The object checked (before any work), then the spool path for it.
std::string checked_spool(const std::string& url, bool force) {
  if (url.ends_with("/"))
    throw usage_error(fmt::format("-o/--output: {} names a prefix, not an object", shown_name(url)));
  const RemoteAddress address = resolve_remote(url, std::getenv);
  remote::Client client(remote::settings_from(std::getenv));
  if (exists(client, address) && !force)
    throw Error(fmt::format("{}: the output exists; use --force to replace it", shown_name(url)));
  return spool_for(url);
}

}  // namespace

RemoteFile::RemoteFile(const std::string& url, bool force)
    : url_(url), local_(checked_spool(url, force)), spool_(std::filesystem::path(local_).parent_path().string()) {}

std::uint64_t RemoteFile::publish(const std::function<void(std::uint64_t)>& uploaded) {
  remote::Client client(remote::settings_from(std::getenv));
  std::uint64_t sent = 0;
  const remote::Uploaded up = remote::put_file(client, resolve_remote(url_, std::getenv), local_, [&](std::uint64_t n) {
    sent += n;
    if (uploaded) uploaded(sent);
  });
  std::remove(local_.c_str());
  spdlog::debug("{}: {} uploaded", shown_name(url_), byte_text(static_cast<double>(up.size)));
  return up.size;
}

}  // namespace mb::io::publish
