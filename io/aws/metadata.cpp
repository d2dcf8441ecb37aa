#include "io/aws/metadata.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/aws/documents.hpp"
#include "io/aws/inputs.hpp"
#include "io/remote/request.hpp"

namespace mb::io::aws {
namespace {

RemoteAddress unsigned_address(const std::string& what, const std::string& url, const Settings& settings) {
  return RemoteAddress{what, url, std::nullopt, settings.environment()};
}

// Hosts a container endpoint may be reached at over plain http (as the AWS
// CLI allows): loopback and the ECS and EKS agents' link-local addresses.
bool may_be_plain(const std::string& url) {
  const auto host_at = url.find("://") + 3;
  std::string host = url.substr(host_at, url.find_first_of("/?#", host_at) - host_at);
  if (host.starts_with('[')) host = host.substr(1, host.find(']') - 1);
  else host = host.substr(0, host.rfind(':') == std::string::npos ? host.size() : host.rfind(':'));
  return host == "localhost" || host.starts_with("127.") || host == "::1" || host == "169.254.170.2" ||
         host == "169.254.170.23" || host == "fd00:ec2::23";
}

// Short limits for the metadata endpoints, which answer at once or not at all.
remote::Settings quick(const Settings& settings, unsigned seconds, unsigned attempts) {
  remote::Settings s = remote::settings_from(settings.environment());
  s.timeout_seconds = seconds;
  s.attempts = attempts;
  return s;
}

}  // namespace

std::optional<Credentials> container_credentials(const Settings& settings) {
  std::string url;
  if (const char* relative = setting(settings, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"))
    url = std::string("http://169.254.170.2") + relative;
  else if (const char* full = setting(settings, "AWS_CONTAINER_CREDENTIALS_FULL_URI"))
    url = full;
  else
    return std::nullopt;
  if (!url.starts_with("https://") && !(url.starts_with("http://") && may_be_plain(url)))
    throw usage_error(fmt::format("AWS_CONTAINER_CREDENTIALS_FULL_URI: {} is neither https nor a loopback or "
                                  "container-agent address",
                                  shown_name(url)));
  std::vector<std::string> headers;
  if (const char* file = setting(settings, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"))
    headers.push_back("Authorization: " + token_file(file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"));
  else if (const char* token = setting(settings, "AWS_CONTAINER_AUTHORIZATION_TOKEN"))
    headers.push_back(std::string("Authorization: ") + token);
  const std::string what = fmt::format("the container credentials endpoint ({})", shown_name(url));
  remote::Client client(quick(settings, 5, 2));
  const remote::Answer a = client.send(unsigned_address(what, url, settings), {.headers = headers});
  return metadata_credentials(a.body, what);
}

std::optional<Credentials> instance_credentials(const Settings& settings) {
  if (const char* off = setting(settings, "AWS_EC2_METADATA_DISABLED")) {
    std::string v(off);
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    if (v == "true") return std::nullopt;
  }
  const char* endpoint = setting(settings, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
  std::string base = endpoint ? endpoint : "http://169.254.169.254";
  while (base.ends_with('/')) base.pop_back();
  const std::string what = fmt::format("the instance metadata service ({})", shown_name(base));
  remote::Client client(quick(settings, 1, 1));
  std::string token;
  try {
    token = client.send(unsigned_address(what, base + "/latest/api/token", settings),
                        {.method = "PUT", .headers = {"X-aws-ec2-metadata-token-ttl-seconds: 21600"}})
                .body;
  } catch (const Error& e) {  // nothing there: not on EC2
    spdlog::debug("no instance metadata: {}", e.what());
    return std::nullopt;
  }
  const std::string auth = "X-aws-ec2-metadata-token: " + token;
  const std::string roles = base + "/latest/meta-data/iam/security-credentials/";
  std::string role = client.send(unsigned_address(what, roles, settings), {.headers = {auth}}).body;
  role = role.substr(0, role.find('\n'));
  if (role.empty()) throw usage_error(fmt::format("{}: the instance has no IAM role", what));
  const remote::Answer a = client.send(unsigned_address(what, roles + role, settings), {.headers = {auth}});
  return metadata_credentials(a.body, fmt::format("{}, role {}", what, role));
}

}  // namespace mb::io::aws
