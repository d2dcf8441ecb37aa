#include "io/aws/sts.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

#include <memory>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/aws/documents.hpp"
#include "io/remote/curl.hpp"
#include "io/remote/request.hpp"

namespace mb::io::aws {
namespace {

std::string endpoint(const Settings& settings, const std::string& region) {
  for (const char* name : {"AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL"})
    if (const char* e = settings.get(name); e && *e) {
      std::string url(e);
      if (!url.starts_with("http://") && !url.starts_with("https://"))
        throw usage_error(fmt::format("{}: \"{}\" is not an http:// or https:// URL", name, shown_name(url)));
      while (url.ends_with('/')) url.pop_back();
      return url + "/";
    }
  return fmt::format("https://sts.{}.amazonaws.com/", region);
}

// The form every call sends: the action, the role, the session's name.
std::string form(const char* action, const RoleRequest& role) {
  const std::string session =
      role.session_name.empty()
          ? fmt::format("microbatch-{}", std::chrono::duration_cast<std::chrono::seconds>(
                                             Clock::now().time_since_epoch()).count())
          : role.session_name;
  std::string body = fmt::format("Action={}&Version=2011-06-15&RoleArn={}&RoleSessionName={}", action,
                                 remote::escaped(role.role_arn), remote::escaped(session));
  if (role.duration_seconds) body += "&DurationSeconds=" + remote::escaped(*role.duration_seconds);
  return body;
}

Credentials call(const RoleRequest& role, const std::string& body, std::optional<Signing> signing,
                 const Settings& settings, const std::string& source) {
  const std::string url = endpoint(settings, role.region);
  const RemoteAddress address{fmt::format("STS ({}) for role {}", shown_name(url), role.role_arn), url,
                              std::move(signing), settings.environment()};
  remote::Client client(remote::settings_from(settings.environment()));
  const remote::Answer answer = client.send(
      address, {.method = "POST", .headers = {"Content-Type: application/x-www-form-urlencoded"}, .text = body});
  return sts_credentials(answer.body, source);
}

}  // namespace

Credentials assume_role(const RoleRequest& role, const Credentials& source, const Settings& settings) {
  std::string body = form("AssumeRole", role);
  if (role.external_id) body += "&ExternalId=" + remote::escaped(*role.external_id);
  const Signing signing{role.region, "sts", std::make_shared<FixedCredentials>(source, role.region)};
  return call(role, body, signing, settings,
              fmt::format("role {} assumed with {}", role.role_arn, source.source));
}

Credentials assume_role_with_web_identity(const RoleRequest& role, const std::string& token,
                                          const Settings& settings) {
  const std::string body = form("AssumeRoleWithWebIdentity", role) + "&WebIdentityToken=" + remote::escaped(token);
  return call(role, body, std::nullopt, settings, fmt::format("role {} assumed with a web identity token", role.role_arn));
}

}  // namespace mb::io::aws
