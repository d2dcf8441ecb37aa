#pragma once
// Credentials an endpoint on the machine serves: the container endpoint
// (ECS, EKS Pod Identity) and EC2's instance metadata service (IMDSv2).
// Each answers none when its variables say it is not there; a source that
// is there but fails throws mb::Error naming it.
#include <optional>

#include "core/credentials.hpp"
#include "core/settings.hpp"

namespace mb::io::aws {

// AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (under http://169.254.170.2) or
// _FULL_URI (https, or http to a loopback or the container hosts), with
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE's (read at each fetch) or
// AWS_CONTAINER_AUTHORIZATION_TOKEN's value as its Authorization header.
std::optional<Credentials> container_credentials(const Settings& settings);

// IMDSv2 at AWS_EC2_METADATA_SERVICE_ENDPOINT (default
// http://169.254.169.254): a session token (PUT), the instance's role, its
// credentials. None when AWS_EC2_METADATA_DISABLED is "true" or nothing
// answers within a second (not on EC2).
std::optional<Credentials> instance_credentials(const Settings& settings);

}  // namespace mb::io::aws
