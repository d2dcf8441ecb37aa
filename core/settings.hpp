#pragma once
// What the process takes from its environment, read once (cli/settings) and
// passed down as a value: nothing under core/, specs/ or io/ reads the
// environment itself, so a run's behaviour is fixed when it starts and a
// test can give any environment without touching the process's.
#include <map>
#include <memory>
#include <string>

#include "core/credentials.hpp"
#include "core/launcher.hpp"  // Environment

namespace mb {

class Settings {
 public:
  Settings() = default;  // an empty environment
  explicit Settings(std::map<std::string, std::string> variables);

  // A variable's value, or null when unset.
  const char* get(const char* name) const;
  bool has(const char* name) const { return get(name) != nullptr; }
  // Lookups in these settings, for the functions that take an Environment;
  // it keeps the variables alive as long as it is held.
  Environment environment() const;

  // Where s3:// requests find their credentials and region: io/aws's chain,
  // which cli/ installs once (with_aws); null until then.
  const std::shared_ptr<const CredentialSource>& aws() const { return aws_; }
  Settings with_aws(std::shared_ptr<const CredentialSource> aws) const;

 private:
  std::shared_ptr<const std::map<std::string, std::string>> variables_;
  std::shared_ptr<const CredentialSource> aws_;
};

// Where a run keeps files of its own (spools, local copies): $TMPDIR, else /tmp.
std::string temporary_directory(const Environment& env);

}  // namespace mb
