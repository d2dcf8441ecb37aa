#include "io/aws/chain.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "io/aws/metadata.hpp"
#include "io/aws/profiles.hpp"

namespace mb::io::aws {
namespace {

std::optional<Credentials> container(const Lookup& at) { return container_credentials(at.settings); }
std::optional<Credentials> instance(const Lookup& at) { return instance_credentials(at.settings); }

struct Link {
  const char* where;  // for the error that lists where the chain looked; {} is the profile's name
  std::optional<Credentials> (*fetch)(const Lookup&);
};

constexpr Link kLinks[] = {
    {"the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)", environment_keys},
    {"profile {}'s role (role_arn with source_profile or credential_source)", assumed_role},
    {"a web identity (AWS_WEB_IDENTITY_TOKEN_FILE, or profile {}'s web_identity_token_file)", web_identity},
    {"profile {} in the credentials file", credentials_file_keys},
    {"profile {}'s credential_process", process_output},
    {"profile {} in the config file", config_file_keys},
    {"the container endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, _FULL_URI)", container},
    {"the instance metadata service", instance},
};

class Chain final : public CredentialSource {
 public:
  Chain(Settings settings, ChainOptions options) : settings_(std::move(settings)), options_(options) {}

  std::optional<Credentials> current() const override {
    if (options_.no_sign_request) return std::nullopt;
    std::unique_lock lock(mutex_);
    load();
    if (!held_) return held_ = find();
    const Freshness f = freshness(*held_, Clock::now());
    if (f == Freshness::Fresh) return held_;
    if (f == Freshness::Required) {
      held_ = fetch_again(held_->source);  // every caller waits: the held ones expire within minutes
      return held_;
    }
    // Advised, as botocore's advisory refresh: one caller fetches, outside
    // the lock; the others go on with the held ones, which serve a while yet.
    if (refreshing_) return held_;
    refreshing_ = true;
    const std::string source = held_->source;
    lock.unlock();
    std::optional<Credentials> next = advised_fetch(source);
    lock.lock();
    refreshing_ = false;
    if (next) held_ = std::move(next);
    return held_;
  }

  std::string region() const override {
    const std::lock_guard lock(mutex_);
    load();
    return region_;
  }

 private:
  Lookup lookup() const { return Lookup{settings_, *files_, region_}; }

  // The shared files and the region, once: a malformed ~/.aws/config fails
  // the runs that use s3:// alone.
  void load() const {
    if (files_) return;
    files_ = read_shared_files(settings_);
    for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"})
      if (const char* r = settings_.get(name); r && *r && region_.empty()) region_ = r;
    if (region_.empty()) region_ = files_->find(files_->profile).get("region").value_or("us-east-1");
  }

  Credentials find() const {
    const Lookup at = lookup();
    std::string looked;
    for (std::size_t i = 0; i < std::size(kLinks); ++i) {
      if (auto c = kLinks[i].fetch(at)) {
        found_ = i;
        spdlog::debug("s3:// requests are signed with credentials from {}", c->source);
        return usable(std::move(*c));
      }
      looked += (looked.empty() ? "" : ", ") + fmt::format(fmt::runtime(kLinks[i].where), files_->profile);
    }
    const std::string others = mb::aws::other_profiles_hint(files_->credentials, files_->config, files_->profile);
    throw usage_error(fmt::format("no AWS credentials for s3:// requests: looked in {} (credentials file {}, config "
                                  "file {}); {}give --no-sign-request for anonymous requests to a public bucket",
                                  looked, files_->credentials.shown, files_->config.shown,
                                  others.empty() ? "" : others + "; or "));
  }

  Credentials usable(Credentials c) const {
    if (c.expires && *c.expires <= Clock::now())
      throw environment_error(fmt::format("the credentials from {} have expired already", c.source));
    return c;
  }

  // Fetched again from `source`, the one that gave the held ones. Safe
  // without the lock: the shared files, the region and the source were set
  // once, before any refresh.
  Credentials fetch_again(const std::string& source) const {
    auto next = kLinks[found_].fetch(lookup());
    if (!next) throw usage_error(fmt::format("{} gives no credentials any more", source));
    spdlog::debug("credentials from {} refreshed", source);
    return usable(std::move(*next));
  }

  // An advised refresh: none when it fails, the held ones serving a while yet.
  std::optional<Credentials> advised_fetch(const std::string& source) const {
    try {
      return fetch_again(source);
    } catch (const Error& e) {
      spdlog::warn("refreshing the credentials failed ({}); the current ones serve a while yet", e.what());
      return std::nullopt;
    }
  }

  Settings settings_;
  ChainOptions options_;
  mutable std::mutex mutex_;
  mutable std::optional<SharedFiles> files_;
  mutable std::string region_;
  mutable std::optional<Credentials> held_;
  mutable std::size_t found_ = 0;
  mutable bool refreshing_ = false;  // a caller is fetching new ones, outside the lock
};

}  // namespace

std::shared_ptr<const CredentialSource> credential_chain(const Settings& settings, ChainOptions options) {
  return std::make_shared<Chain>(settings, options);
}

}  // namespace mb::io::aws
