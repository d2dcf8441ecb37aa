#pragma once
// AWS STS: a role's temporary credentials, for a profile's role_arn
// (AssumeRole, signed with the source profile's credentials) and for a web
// identity token (AssumeRoleWithWebIdentity, unsigned: the token is the
// proof). Sent to AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else STS's
// regional endpoint.
#include <optional>
#include <string>

#include "core/credentials.hpp"
#include "core/settings.hpp"

namespace mb::io::aws {

struct RoleRequest {
  std::string role_arn;
  std::string session_name;              // empty: "microbatch-" and the time
  std::optional<std::string> external_id;  // AssumeRole only
  std::optional<std::string> duration_seconds;
  std::string region;  // of the STS endpoint, and signed for
};

// Throws mb::Error naming the role and STS's answer (exit 3 when a retry
// may help, 2 when STS refuses).
Credentials assume_role(const RoleRequest& role, const Credentials& source, const Settings& settings);
Credentials assume_role_with_web_identity(const RoleRequest& role, const std::string& token,
                                          const Settings& settings);

}  // namespace mb::io::aws
