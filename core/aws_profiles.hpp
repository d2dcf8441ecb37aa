#pragma once
// The AWS shared files (~/.aws/credentials and ~/.aws/config) read as the
// AWS CLI reads them: INI sections of `key = value` lines, `#` and `;`
// comment lines, indented lines continuing a value, keys in any case.
// In the credentials file a section is a profile's name; in the config
// file it is `[profile NAME]`, or `[default]`. Pure: text in, values out.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mb::aws {

using Section = std::map<std::string, std::string>;  // key (lower case) -> value

// One shared file, by section name as written ("profile dev", "default").
struct SharedFile {
  std::string shown;  // its path, as messages name it
  std::map<std::string, Section> sections;
};

// Throws mb::Error (a usage error) naming `shown` and the line for a line
// that is neither a section, a setting, a comment nor a continuation, and
// for a section or key given twice (the AWS CLI refuses those too).
SharedFile parse_shared_file(std::string_view text, std::string shown);

// The profile `name` of a config file: `[profile NAME]`, and `[default]`
// for "default" (`[profile default]` when there is no `[default]`).
const Section* config_profile(const SharedFile& config, const std::string& name);
// The profile `name` of a credentials file: `[NAME]`.
const Section* credentials_profile(const SharedFile& credentials, const std::string& name);

// A profile's setting, credentials file first (it wins over the config file
// for the same profile, as in the AWS CLI); empty values count as unset.
struct Profile {
  std::string name;
  const Section* credentials = nullptr;  // its section in the credentials file, if any
  const Section* config = nullptr;       // in the config file, if any
  std::optional<std::string> get(const std::string& key) const;
  bool exists() const { return credentials || config; }
};
Profile find_profile(const SharedFile& credentials, const SharedFile& config, const std::string& name);

// The profiles the two files define, sorted, each once: the credentials
// file's sections, the config file's [default] and [profile NAME] (its
// other sections, [sso-session X] or [services X], are not profiles).
std::vector<std::string> profile_names(const SharedFile& credentials, const SharedFile& config);

// For a run that found no credentials with profile `used`: the profiles the
// files hold besides it and how to pick one ("profile lab is in those files
// too: pick it with AWS_PROFILE=lab"), so that the user learns the name;
// empty when there is none.
std::string other_profiles_hint(const SharedFile& credentials, const SharedFile& config, const std::string& used);

// For an AWS_PROFILE that names no profile: "did you mean lab?" when one is
// close to `named`, else the profiles there are; empty when there is none.
std::string unknown_profile_hint(const SharedFile& credentials, const SharedFile& config, const std::string& named);

}  // namespace mb::aws
