#include "io/publish/remote_file.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "core/units.hpp"
#include "io/remote/curl.hpp"
#include "io/remote/upload.hpp"

namespace mb::io::publish {
namespace {

std::string spool_for(const RemoteAddress& address) {
  const std::string& url = address.name;
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  return fmt::format("{}/microbatch-upload-{}-{:x}", temporary_directory(address.env), ::getpid(),
                     stamp & 0xffffff) +
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
RemoteAddress checked(const std::string& url, bool force, const Settings& settings) {
  if (url.ends_with("/"))
    throw usage_error(fmt::format("-o/--output: {} names a prefix, not an object", shown_name(url)));
  RemoteAddress address = resolve_remote(url, settings.environment());
  remote::Client client(remote::settings_from(address.env));
  if (exists(client, address) && !force)
    throw Error(fmt::format("{}: the output exists; use --force to replace it", shown_name(url)));
  return address;
}

}  // namespace

RemoteFile::RemoteFile(const std::string& url, bool force, const Settings& settings)
    : address_(checked(url, force, settings)),
      local_(spool_for(address_)),
      spool_(std::filesystem::path(local_).parent_path().string()) {}

std::uint64_t RemoteFile::publish(const std::function<void(std::uint64_t)>& uploaded) {
  remote::Client client(remote::settings_from(address_.env));
  std::uint64_t sent = 0;
  const remote::Uploaded up = remote::put_file(client, address_, local_, [&](std::uint64_t n) {
    sent += n;
    if (uploaded) uploaded(sent);
  });
  std::remove(local_.c_str());
  spdlog::debug("{}: {} uploaded", shown_name(address_.name), byte_text(static_cast<double>(up.size)));
  return up.size;
}

}  // namespace mb::io::publish
