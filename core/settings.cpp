#include "core/settings.hpp"

#include <utility>

namespace mb {

Settings::Settings(std::map<std::string, std::string> variables)
    : variables_(std::make_shared<const std::map<std::string, std::string>>(std::move(variables))) {}

const char* Settings::get(const char* name) const {
  if (!variables_) return nullptr;
  const auto it = variables_->find(name);
  return it == variables_->end() ? nullptr : it->second.c_str();
}

Settings Settings::with_aws(std::shared_ptr<const CredentialSource> aws) const {
  Settings out = *this;
  out.aws_ = std::move(aws);
  return out;
}

Settings Settings::with_s3(S3Options s3) const {
  Settings out = *this;
  out.s3_ = std::move(s3);
  return out;
}

std::vector<std::string> S3Options::request_headers() const {
  if (!requester_pays) return {};
  return {"x-amz-request-payer: requester"};
}

std::vector<std::string> S3Options::creation_headers() const {
  std::vector<std::string> out;
  if (!sse.empty()) out.push_back("x-amz-server-side-encryption: " + sse);
  if (!kms_key_id.empty()) out.push_back("x-amz-server-side-encryption-aws-kms-key-id: " + kms_key_id);
  return out;
}

std::vector<std::string> Settings::assignments() const {
  std::vector<std::string> out;
  if (variables_)
    for (const auto& [name, value] : *variables_) out.push_back(name + "=" + value);
  return out;
}

Environment Settings::environment() const {
  return [held = *this](const char* name) { return held.get(name); };
}

std::string temporary_directory(const Environment& env) {
  const char* dir = env ? env("TMPDIR") : nullptr;
  return dir && *dir ? dir : "/tmp";
}

}  // namespace mb
