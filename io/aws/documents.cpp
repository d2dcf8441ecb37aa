#include "io/aws/documents.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "io/remote/curl.hpp"  // xml_element

namespace mb::io::aws {
namespace {

// The string member `key` of `doc`, "" when absent or not a string.
std::string member(const nlohmann::json& doc, const char* key) {
  const auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Keys, token and expiry checked: both keys given, an expiry that is a time.
Credentials checked(Credentials c, const std::string& expiration, const std::string& source) {
  if (c.key_id.empty() || c.secret.empty())
    throw usage_error(fmt::format("{}: the answer holds no access key id and secret access key", source));
  if (!expiration.empty()) {
    c.expires = parse_aws_time(expiration);
    if (!c.expires) throw usage_error(fmt::format("{}: the answer's expiration is not an ISO 8601 time", source));
  }
  c.source = source;
  return c;
}

// The text between <tag> and </tag> as it stands (its elements' entities
// are decoded once, when they are read).
std::string raw_element(const std::string& xml, const std::string& tag) {
  const auto open = xml.find("<" + tag + ">");
  if (open == std::string::npos) return "";
  const auto from = open + tag.size() + 2;
  const auto close = xml.find("</" + tag + ">", from);
  return close == std::string::npos ? "" : xml.substr(from, close - from);
}

nlohmann::json parsed(const std::string& json, const std::string& source) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    throw usage_error(fmt::format("{}: the answer is not a JSON object", source));
  return doc;
}

}  // namespace

Credentials process_credentials(const std::string& json, const std::string& source) {
  const nlohmann::json doc = parsed(json, source);
  const auto version = doc.find("Version");
  if (version == doc.end() || !version->is_number_integer() || version->get<int>() != 1)
    throw usage_error(fmt::format("{}: the answer's Version is not 1", source));
  Credentials c{member(doc, "AccessKeyId"), member(doc, "SecretAccessKey"), member(doc, "SessionToken"), {}, {}};
  return checked(std::move(c), member(doc, "Expiration"), source);
}

Credentials metadata_credentials(const std::string& json, const std::string& source) {
  const nlohmann::json doc = parsed(json, source);
  if (const std::string code = member(doc, "Code"); !code.empty() && code != "Success")
    throw environment_error(fmt::format("{}: the answer's Code is \"{}\"", source, code));
  Credentials c{member(doc, "AccessKeyId"), member(doc, "SecretAccessKey"), member(doc, "Token"), {}, {}};
  return checked(std::move(c), member(doc, "Expiration"), source);
}

Credentials sts_credentials(const std::string& xml, const std::string& source) {
  const std::string block = raw_element(xml, "Credentials");
  Credentials c{remote::xml_element(block, "AccessKeyId"), remote::xml_element(block, "SecretAccessKey"),
                remote::xml_element(block, "SessionToken"), {}, {}};
  const std::string expiration = remote::xml_element(block, "Expiration");
  if (c.token.empty() || expiration.empty())
    throw usage_error(fmt::format("{}: the answer holds no session token and expiration", source));
  return checked(std::move(c), expiration, source);
}

}  // namespace mb::io::aws
