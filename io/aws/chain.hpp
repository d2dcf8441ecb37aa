#pragma once
// Where s3:// requests get their credentials: the AWS CLI's chain, in its
// order, the first source that is configured giving them.
//   1. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN)
//   2. the profile's role: role_arn with source_profile or credential_source (STS AssumeRole)
//   3. a web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, or the profile's
//      web_identity_token_file + role_arn (STS AssumeRoleWithWebIdentity)
//   4. the profile's keys in the credentials file
//   5. the profile's credential_process
//   6. the profile's keys in the config file
//   7. the container endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI)
//   8. EC2's instance metadata (IMDSv2)
// The profile is AWS_PROFILE's, else "default". Looked up when an s3://
// name is first resolved (a run on local files never reads ~/.aws), kept,
// and fetched again from the same source before they expire.
#include <memory>

#include "core/credentials.hpp"
#include "core/settings.hpp"

namespace mb::io::aws {

struct ChainOptions {
  bool no_sign_request = false;  // --no-sign-request: anonymous requests, no lookup
};

// The region is AWS_REGION, else AWS_DEFAULT_REGION, else the profile's
// region, else us-east-1. When no source has credentials, current() throws
// a usage error listing where it looked.
std::shared_ptr<const CredentialSource> credential_chain(const Settings& settings, ChainOptions options);

}  // namespace mb::io::aws
