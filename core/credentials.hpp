#pragma once
// AWS credentials: what signs an s3:// request, where it was found, and
// when it must be fetched again. Finding them (the AWS CLI's chain: the
// environment, profiles, STS, a process, container and instance metadata)
// is io/aws's; what is decided about them without any I/O is here.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mb {

using Clock = std::chrono::system_clock;

struct Credentials {
  std::string key_id, secret, token;  // token: temporary credentials only
  std::optional<Clock::time_point> expires;  // none: they do not expire
  // Where they were found, as -v and a refused request name it ("the
  // environment (AWS_ACCESS_KEY_ID, ...)", "profile dev in /home/u/.aws/credentials").
  std::string source;
};

// How long before their expiry credentials are fetched again (as the AWS
// CLI: advisory at 15 minutes left, while the old ones still serve when the
// fetch fails; mandatory at 10). A request takes far less than the margin.
inline constexpr std::chrono::minutes kRefreshAdvised{15};
inline constexpr std::chrono::minutes kRefreshRequired{10};

enum class Freshness { Fresh, Advised, Required };
Freshness freshness(const Credentials& c, Clock::time_point now);

// Where s3:// requests get their credentials and region: looked up once,
// when first asked, and refreshed before they expire. Thread-safe: requests
// of many threads ask for them.
class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  // Credentials good for a while yet; none: requests go unsigned, as asked
  // (--no-sign-request). Throws mb::Error when none can be found (naming
  // where it looked) or a source that was found fails.
  virtual std::optional<Credentials> current() const = 0;
  // The region requests are signed for and sent to.
  virtual std::string region() const = 0;
};

// Credentials given whole (keys a test or a profile holds): `current`
// answers them, unsigned when none.
class FixedCredentials final : public CredentialSource {
 public:
  FixedCredentials(std::optional<Credentials> credentials, std::string region)
      : credentials_(std::move(credentials)), region_(std::move(region)) {}
  std::optional<Credentials> current() const override { return credentials_; }
  std::string region() const override { return region_; }

 private:
  std::optional<Credentials> credentials_;
  std::string region_;
};

// An ISO 8601 UTC time as AWS documents write it ("2026-12-06T03:00:00Z",
// with fractional seconds or a "+00:00" offset too); none when it is not one.
std::optional<Clock::time_point> parse_aws_time(std::string_view text);

// A command line split into words as a POSIX shell splits a simple command
// (quotes and backslashes; no expansions), as the AWS CLI splits a
// profile's credential_process. Throws mb::Error (a usage error) for an
// unterminated quote.
std::vector<std::string> split_command(std::string_view line);

}  // namespace mb
