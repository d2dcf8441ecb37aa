#include "io/aws/profiles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "io/aws/inputs.hpp"
#include "io/aws/metadata.hpp"
#include "io/aws/process.hpp"
#include "io/aws/sts.hpp"

namespace mb::io::aws {
namespace {

using mb::aws::Profile;
using mb::aws::Section;

// `path` with a leading "~/" under $HOME, as the AWS CLI expands it.
std::string expanded(std::string path, const Settings& settings) {
  if (path.starts_with("~/")) {
    const char* home = setting(settings, "HOME");
    path = std::string(home ? home : "") + path.substr(1);
  }
  return path;
}

mb::aws::SharedFile read_file(const Settings& settings, const char* variable_name, const char* default_name) {
  const char* given = setting(settings, variable_name);
  const std::string path = expanded(given ? given : std::string("~/.aws/") + default_name, settings);
  std::error_code absent;
  if (!std::filesystem::exists(path, absent) && !absent) return {path, {}};  // none: an empty file
  std::ifstream in(path, std::ios::binary);
  if (!in) throw usage_error(fmt::format("cannot read the AWS {} file {}: {}", default_name, path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return mb::aws::parse_shared_file(text.str(), path);
}

// A section's keys, none when it has neither; half of them is an error.
std::optional<Credentials> keys(const Section* section, const std::string& source) {
  if (!section) return std::nullopt;
  const auto get = [&](const char* key) {
    const auto it = section->find(key);
    return it == section->end() ? std::string() : it->second;
  };
  Credentials c{get("aws_access_key_id"), get("aws_secret_access_key"), get("aws_session_token"), {}, source};
  if (c.key_id.empty() && c.secret.empty()) return std::nullopt;
  if (c.key_id.empty() || c.secret.empty())
    throw usage_error(fmt::format("{}: {} is set but {} is not", source,
                                  c.key_id.empty() ? "aws_secret_access_key" : "aws_access_key_id",
                                  c.key_id.empty() ? "aws_access_key_id" : "aws_secret_access_key"));
  return c;
}

std::string in_credentials(const Lookup& at, const std::string& profile) {
  return fmt::format("profile {} in {}", profile, at.files.credentials.shown);
}
std::string in_config(const Lookup& at, const std::string& profile) {
  return fmt::format("profile {} in {}", profile, at.files.config.shown);
}

// A setting of the web identity source: its variable (when `env_too`), else the profile's key.
std::optional<std::string> web_setting(const Lookup& at, const Profile& p, bool env_too, const char* name,
                                       const char* key) {
  if (env_too)
    if (const char* v = setting(at.settings, name)) return std::string(v);
  return p.get(key);
}

std::optional<Credentials> web_identity_of(const Lookup& at, const Profile& p, bool env_too) {
  const auto token_path = web_setting(at, p, env_too, "AWS_WEB_IDENTITY_TOKEN_FILE", "web_identity_token_file");
  if (!token_path) return std::nullopt;
  const auto role = web_setting(at, p, env_too, "AWS_ROLE_ARN", "role_arn");
  if (!role)
    throw usage_error(fmt::format("a web identity token file ({}) is given without a role (AWS_ROLE_ARN or the "
                                  "profile's role_arn)",
                                  *token_path));
  RoleRequest r{*role, web_setting(at, p, env_too, "AWS_ROLE_SESSION_NAME", "role_session_name").value_or(""),
                std::nullopt, p.get("duration_seconds"), at.region};
  return assume_role_with_web_identity(r, token_file(*token_path, "the web identity token file"), at.settings);
}

bool has_role(const Profile& p) {
  return p.get("role_arn") && (p.get("source_profile") || p.get("credential_source"));
}
bool has_keys(const Profile& p) { return p.get("aws_access_key_id").has_value(); }

std::optional<Credentials> profile_process(const Lookup& at, const Profile& p) {
  const auto command = p.get("credential_process");
  if (!command) return std::nullopt;
  return process_credentials_of(*command, fmt::format("credential_process of profile {}", p.name), at.settings);
}

Credentials role_of(const Lookup& at, const Profile& p, std::vector<std::string>& visited);

// What a profile gives as a role's source: its role (chained), else the
// sources a profile has, in the chain's order.
Credentials source_profile_credentials(const Lookup& at, const Profile& p, std::vector<std::string>& visited,
                                       bool role_too) {
  if (role_too && has_role(p) && !has_keys(p)) return role_of(at, p, visited);
  if (auto c = web_identity_of(at, p, false)) return *c;
  if (auto c = keys(p.credentials, in_credentials(at, p.name))) return *c;
  if (auto c = profile_process(at, p)) return *c;
  if (auto c = keys(p.config, in_config(at, p.name))) return *c;
  throw usage_error(fmt::format("profile {} (a role's source_profile) has no credentials", p.name));
}

Credentials credential_source(const Lookup& at, const Profile& p, const std::string& named) {
  std::optional<Credentials> c;
  if (named == "Environment") c = environment_keys(at);
  else if (named == "EcsContainer") c = container_credentials(at.settings);
  else if (named == "Ec2InstanceMetadata") c = instance_credentials(at.settings);
  else
    throw usage_error(fmt::format("profile {}: credential_source \"{}\" is not Environment, EcsContainer or "
                                  "Ec2InstanceMetadata",
                                  p.name, named));
  if (!c) throw usage_error(fmt::format("profile {}: its credential_source {} has no credentials", p.name, named));
  return *c;
}

Credentials role_of(const Lookup& at, const Profile& p, std::vector<std::string>& visited) {
  if (p.get("mfa_serial"))
    throw usage_error(fmt::format("profile {}: its role asks for an MFA code (mfa_serial), which microbatch cannot "
                                  "prompt for; run `aws sts assume-role` and export the temporary keys",
                                  p.name));
  const auto source_profile = p.get("source_profile");
  const auto named_source = p.get("credential_source");
  if (source_profile && named_source)
    throw usage_error(fmt::format("profile {}: give source_profile or credential_source, not both", p.name));
  Credentials source;
  if (named_source) {
    source = credential_source(at, p, *named_source);
  } else {
    const std::string& name = *source_profile;
    if (std::find(visited.begin(), visited.end(), name) != visited.end() && name != p.name)
      throw usage_error(fmt::format("profile {}: its source_profile chain loops back to {}", p.name, name));
    visited.push_back(name);
    const Profile next = at.files.find(name);
    if (!next.exists())
      throw usage_error(fmt::format("profile {}: its source_profile {} is in neither {} nor {}", p.name, name,
                                    at.files.credentials.shown, at.files.config.shown));
    source = source_profile_credentials(at, next, visited, name != p.name);  // its own source: its keys
  }
  RoleRequest r{*p.get("role_arn"), p.get("role_session_name").value_or(""), p.get("external_id"),
                p.get("duration_seconds"), at.region};
  return assume_role(r, source, at.settings);
}

}  // namespace

SharedFiles read_shared_files(const Settings& settings) {
  SharedFiles files{read_file(settings, "AWS_SHARED_CREDENTIALS_FILE", "credentials"),
                    read_file(settings, "AWS_CONFIG_FILE", "config"), "default"};
  if (const char* named = setting(settings, "AWS_PROFILE")) {
    files.profile = named;
    if (!files.find(files.profile).exists()) {
      const std::string hint = mb::aws::unknown_profile_hint(files.credentials, files.config, files.profile);
      throw usage_error(fmt::format("AWS_PROFILE: the profile \"{}\" is in neither {} nor {}{}", files.profile,
                                    files.credentials.shown, files.config.shown, hint.empty() ? "" : "; " + hint));
    }
  }
  return files;
}

std::optional<Credentials> environment_keys(const Lookup& at) {
  Credentials c;
  const auto get = [&](const char* name) {
    const char* v = setting(at.settings, name);
    return std::string(v ? v : "");
  };
  c.key_id = get("AWS_ACCESS_KEY_ID");
  c.secret = get("AWS_SECRET_ACCESS_KEY");
  c.token = get("AWS_SESSION_TOKEN");
  c.source = "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)";
  if (c.key_id.empty() && c.secret.empty()) return std::nullopt;
  if (c.key_id.empty() || c.secret.empty())
    throw usage_error(fmt::format("{} is set but {} is not: give both for signed requests",
                                  c.key_id.empty() ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID",
                                  c.key_id.empty() ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY"));
  return c;
}

std::optional<Credentials> assumed_role(const Lookup& at) {
  const Profile p = at.files.find(at.files.profile);
  if (!has_role(p) || (p.get("web_identity_token_file") && !p.get("source_profile"))) return std::nullopt;
  std::vector<std::string> visited{p.name};
  return role_of(at, p, visited);
}

std::optional<Credentials> web_identity(const Lookup& at) {
  return web_identity_of(at, at.files.find(at.files.profile), true);
}

std::optional<Credentials> credentials_file_keys(const Lookup& at) {
  return keys(mb::aws::credentials_profile(at.files.credentials, at.files.profile),
              in_credentials(at, at.files.profile));
}

std::optional<Credentials> process_output(const Lookup& at) {
  return profile_process(at, at.files.find(at.files.profile));
}

std::optional<Credentials> config_file_keys(const Lookup& at) {
  return keys(mb::aws::config_profile(at.files.config, at.files.profile), in_config(at, at.files.profile));
}

}  // namespace mb::io::aws
