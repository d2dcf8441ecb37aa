#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/aws_profiles.hpp"
#include "core/credentials.hpp"
#include "core/error.hpp"

using mb::aws::find_profile;
using mb::aws::parse_shared_file;

TEST_CASE("aws profiles: the shared files read as the AWS CLI reads them") {
  const auto credentials = parse_shared_file(
      "# keys\n[default]\naws_access_key_id = AKDEF\nAWS_Secret_Access_Key=SKDEF\n\n; another\n"
      "[dev]\r\naws_access_key_id = AKDEV\r\naws_secret_access_key = SK=with=equals\r\n",
      "creds");
  const auto config = parse_shared_file(
      "[default]\nregion = eu-west-3\n[profile dev]\nregion = ap-south-1\naws_access_key_id = AKCONFIG\n"
      "s3 =\n  max_concurrent_requests = 20\n[profile cfgonly]\nregion=us-west-2\n[sso-session x]\nsso_region = a\n",
      "config");
  const auto def = find_profile(credentials, config, "default");
  CHECK(def.get("aws_access_key_id") == "AKDEF");
  CHECK(def.get("aws_secret_access_key") == "SKDEF");  // keys in any case
  CHECK(def.get("region") == "eu-west-3");
  const auto dev = find_profile(credentials, config, "dev");
  CHECK(dev.get("aws_access_key_id") == "AKDEV");  // the credentials file wins
  CHECK(dev.get("aws_secret_access_key") == "SK=with=equals");
  CHECK(dev.get("region") == "ap-south-1");
  CHECK(dev.get("s3") == "\nmax_concurrent_requests = 20");  // a nested setting keeps its lines
  CHECK(find_profile(credentials, config, "cfgonly").exists());
  CHECK_FALSE(find_profile(credentials, config, "cfgonly").credentials);
  CHECK_FALSE(find_profile(credentials, config, "nope").exists());
  CHECK_FALSE(find_profile(credentials, config, "sso-session x").exists());  // not a profile
  CHECK_FALSE(find_profile(credentials, config, "x").get("region"));
}

TEST_CASE("aws profiles: [profile default] serves when there is no [default]") {
  const auto none = parse_shared_file("", "creds");
  CHECK(find_profile(none, parse_shared_file("[profile default]\nregion=r1\n", "c"), "default").get("region") == "r1");
  CHECK(find_profile(none, parse_shared_file("[default]\nregion=r2\n[profile default]\nregion=r1\n", "c"), "default")
            .get("region") == "r2");
  // In the config file "[dev]" is not profile dev.
  CHECK_FALSE(find_profile(none, parse_shared_file("[dev]\nregion=r\n", "c"), "dev").exists());
}

TEST_CASE("aws profiles: the profiles a run did not use are named, a misspelt one suggested") {
  const auto credentials = parse_shared_file("[lab]\naws_access_key_id = A\n", "creds");
  const auto config = parse_shared_file("[default]\nregion = x\n[profile prod]\n[sso-session s]\n", "config");
  CHECK(mb::aws::profile_names(credentials, config) == std::vector<std::string>{"default", "lab", "prod"});
  CHECK(mb::aws::other_profiles_hint(credentials, config, "default") ==
        "profiles lab, prod are in those files too: pick one with AWS_PROFILE=lab");
  CHECK(mb::aws::other_profiles_hint(credentials, parse_shared_file("", "config"), "default") ==
        "profile lab is in those files too: pick it with AWS_PROFILE=lab");
  CHECK(mb::aws::other_profiles_hint(parse_shared_file("", "c"), parse_shared_file("", "d"), "default").empty());
  CHECK(mb::aws::unknown_profile_hint(credentials, config, "labb") == "did you mean lab? (AWS_PROFILE=lab)");
  CHECK(mb::aws::unknown_profile_hint(credentials, config, "staging") == "the profiles there: default, lab, prod");
}

TEST_CASE("aws profiles: a malformed file names itself and the line") {
  for (const auto& [text, line] : {std::pair{"[a]\nkey = 1\nnot a setting\n", 3}, std::pair{"key = 1\n", 1},
                                   std::pair{"[a]\n[a]\n", 2}, std::pair{"[a]\nk=1\nK=2\n", 3},
                                   std::pair{"[a\n", 1}}) {
    try {
      parse_shared_file(text, "/home/u/.aws/config");
      FAIL("taken: ", text);
    } catch (const mb::Error& e) {
      CHECK(e.exit_code() == 2);
      CHECK(std::string(e.what()).starts_with("/home/u/.aws/config, line " + std::to_string(line) + ":"));
    }
  }
}

TEST_CASE("credentials: times as AWS writes them") {
  const auto t = mb::parse_aws_time("2026-12-06T03:04:05Z");
  REQUIRE(t);
  CHECK(mb::Clock::to_time_t(*t) == 1796526245);
  CHECK(mb::parse_aws_time("2026-12-06T03:04:05.123456Z") == t);
  CHECK(mb::parse_aws_time("2026-12-06T03:04:05+00:00") == t);
  for (const char* bad : {"", "2026-12-06", "2026-12-06T03:04:05", "2026-13-06T03:04:05Z", "2026-12-06T03:04:05+02:00",
                          "tomorrow"})
    CHECK_FALSE(mb::parse_aws_time(bad));
}

TEST_CASE("credentials: refreshed 15 minutes before they expire, required at 10") {
  const auto now = mb::Clock::now();
  mb::Credentials c{"AK", "SK", "T", {}, "test"};
  CHECK(mb::freshness(c, now) == mb::Freshness::Fresh);  // they do not expire
  c.expires = now + std::chrono::minutes(16);
  CHECK(mb::freshness(c, now) == mb::Freshness::Fresh);
  c.expires = now + std::chrono::minutes(14);
  CHECK(mb::freshness(c, now) == mb::Freshness::Advised);
  c.expires = now + std::chrono::minutes(9);
  CHECK(mb::freshness(c, now) == mb::Freshness::Required);
  c.expires = now - std::chrono::minutes(1);
  CHECK(mb::freshness(c, now) == mb::Freshness::Required);
}

TEST_CASE("credentials: credential_process is split as a shell splits a simple command") {
  using V = std::vector<std::string>;
  CHECK(mb::split_command("/usr/bin/helper --profile dev") == V{"/usr/bin/helper", "--profile", "dev"});
  CHECK(mb::split_command("  a  'b c'  \"d \\\"e\\\" $f\" g\\ h ''") == V{"a", "b c", "d \"e\" $f", "g h", ""});
  CHECK(mb::split_command("") == V{});
  CHECK_THROWS_AS(mb::split_command("helper 'open"), mb::Error);
}
