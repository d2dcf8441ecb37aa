#pragma once
// What the process takes from its environment, read once (cli/settings) and
// passed down as a value: nothing under core/, specs/ or io/ reads the
// environment itself, so a run's behaviour is fixed when it starts and a
// test can give any environment without touching the process's. cli/ adds
// what remote requests need besides: the credential source and the S3
// options of the command line.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/credentials.hpp"
#include "core/launcher.hpp"  // Environment

namespace mb {

// What s3:// requests ask of the store, from the command line, as the AWS
// CLI spells it: --sse (AES256 or aws:kms: how the objects a run creates
// are encrypted; none: the bucket's default), --sse-kms-key-id (with
// aws:kms: the key; none: the account's default KMS key), --request-payer
// requester (the requester pays for the requests of a Requester Pays bucket).
struct S3Options {
  std::string sse;
  std::string kms_key_id;
  bool requester_pays = false;
  // The headers every request carries, and those of a request that creates an object.
  std::vector<std::string> request_headers() const;
  std::vector<std::string> creation_headers() const;
};

class Settings {
 public:
  Settings() = default;  // an empty environment
  explicit Settings(std::map<std::string, std::string> variables);

  // A variable's value, or null when unset.
  const char* get(const char* name) const;
  bool has(const char* name) const { return get(name) != nullptr; }
  // Every variable as NAME=value, in name order: the environment of a
  // process the run starts.
  std::vector<std::string> assignments() const;
  // Lookups in these settings, for the functions that take an Environment;
  // it keeps the variables alive as long as it is held.
  Environment environment() const;

  // Where s3:// requests find their credentials and region: io/aws's chain,
  // which cli/ installs once (with_aws); null until then.
  const std::shared_ptr<const CredentialSource>& aws() const { return aws_; }
  Settings with_aws(std::shared_ptr<const CredentialSource> aws) const;
  // What s3:// requests ask of the store (cli/ installs it with the chain).
  const S3Options& s3() const { return s3_; }
  Settings with_s3(S3Options s3) const;

 private:
  std::shared_ptr<const std::map<std::string, std::string>> variables_;
  std::shared_ptr<const CredentialSource> aws_;
  S3Options s3_;
};

// Where a run keeps files of its own (spools, local copies): $TMPDIR, else /tmp.
std::string temporary_directory(const Environment& env);

}  // namespace mb
