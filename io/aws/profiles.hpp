#pragma once
// Credentials the environment and the shared files give, one function per
// source of the AWS CLI's chain (io/aws/chain.hpp puts them in order). Each
// answers none when its source is not configured, and throws mb::Error
// when it is but fails (half-given keys, a role STS refuses, a process that
// fails).
#include <optional>
#include <string>

#include "core/aws_profiles.hpp"
#include "core/credentials.hpp"
#include "core/settings.hpp"

namespace mb::io::aws {

// The shared files as this run reads them, and the profile it uses.
struct SharedFiles {
  mb::aws::SharedFile credentials;  // AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials
  mb::aws::SharedFile config;       // AWS_CONFIG_FILE, else ~/.aws/config
  std::string profile;              // AWS_PROFILE, else "default"
  mb::aws::Profile find(const std::string& name) const {
    return mb::aws::find_profile(credentials, config, name);
  }
};

// Reads them (a missing file is an empty one). Throws mb::Error (a usage
// error) for an unreadable or malformed file, and for an AWS_PROFILE that
// names no profile in either, as the AWS CLI does.
SharedFiles read_shared_files(const Settings& settings);

// What the sources read: the environment, and the shared files.
struct Lookup {
  const Settings& settings;
  const SharedFiles& files;
  std::string region;  // STS's
};

// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN.
std::optional<Credentials> environment_keys(const Lookup& at);
// The profile's role_arn with source_profile or credential_source (STS AssumeRole).
std::optional<Credentials> assumed_role(const Lookup& at);
// AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, else the profile's
// web_identity_token_file and role_arn (STS AssumeRoleWithWebIdentity).
std::optional<Credentials> web_identity(const Lookup& at);
// aws_access_key_id and aws_secret_access_key of the profile's section in
// the credentials file.
std::optional<Credentials> credentials_file_keys(const Lookup& at);
// The profile's credential_process.
std::optional<Credentials> process_output(const Lookup& at);
// The keys of the profile's section in the config file.
std::optional<Credentials> config_file_keys(const Lookup& at);

}  // namespace mb::io::aws
