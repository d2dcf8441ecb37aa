#pragma once
// What credential sources answer, read into Credentials: a
// credential_process's JSON, the container and instance metadata JSON, and
// STS's XML. Pure: text in, values out; a document that is not what its
// source promises is an mb::Error naming the source (never a value in it).
#include <string>

#include "core/credentials.hpp"

namespace mb::io::aws {

// {"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken"?, "Expiration"?}
Credentials process_credentials(const std::string& json, const std::string& source);

// {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}, as the ECS
// container endpoint and EC2's instance metadata serve them.
Credentials metadata_credentials(const std::string& json, const std::string& source);

// <AssumeRole[WithWebIdentity]Response>...<Credentials><AccessKeyId>...
Credentials sts_credentials(const std::string& xml, const std::string& source);

}  // namespace mb::io::aws
