// io/aws without a network: the documents sources answer, and the chain's
// order and errors over real shared files and a real credential_process.
// The sources behind endpoints (STS, container, instance metadata) are
// tested against loopback fakes in tests/e2e/test_credentials.py.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "io/aws/chain.hpp"
#include "io/aws/documents.hpp"

namespace fs = std::filesystem;

namespace {

struct Home {
  fs::path path;
  Home() {
    char name[] = "/tmp/mb-aws-XXXXXX";
    path = mkdtemp(name);
    fs::create_directories(path / ".aws");
  }
  ~Home() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name) << text; }
  // A shell script `name` in this home, executable, as a credential_process; its path.
  fs::path script(const std::string& name, const std::string& body) const {
    std::ofstream(path / name) << "#!/bin/sh\n" << body;
    fs::permissions(path / name, fs::perms::owner_all);
    return path / name;
  }
  // A chain over this home; the instance metadata service is never asked.
  std::shared_ptr<const mb::CredentialSource> chain(std::map<std::string, std::string> vars = {}) const {
    vars.emplace("HOME", path.string());
    vars.emplace("AWS_EC2_METADATA_DISABLED", "true");
    return mb::io::aws::credential_chain(mb::Settings(vars), {});
  }
};

std::string error_of(const mb::CredentialSource& source) {
  try {
    source.current();
  } catch (const mb::Error& e) {
    CHECK(e.exit_code() == 2);
    return e.what();
  }
  FAIL("credentials were found");
  return "";
}

}  // namespace

TEST_CASE("aws documents: process, metadata and STS answers") {
  const auto p = mb::io::aws::process_credentials(
      R"({"Version": 1, "AccessKeyId": "AK", "SecretAccessKey": "SK", "SessionToken": "T",
          "Expiration": "2030-01-01T00:00:00Z"})", "proc");
  CHECK(p.key_id == "AK");
  CHECK(p.secret == "SK");
  CHECK(p.token == "T");
  CHECK(p.expires == mb::parse_aws_time("2030-01-01T00:00:00Z"));
  CHECK(p.source == "proc");
  CHECK_FALSE(mb::io::aws::process_credentials(R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"S"})", "p").expires);
  const auto m = mb::io::aws::metadata_credentials(
      R"({"Code":"Success","AccessKeyId":"AK","SecretAccessKey":"SK","Token":"T","Expiration":"2030-01-01T00:00:00Z"})",
      "imds");
  CHECK(m.token == "T");
  const auto s = mb::io::aws::sts_credentials(
      "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>AK</AccessKeyId>"
      "<SecretAccessKey>S&amp;K</SecretAccessKey><SessionToken>T</SessionToken>"
      "<Expiration>2030-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>",
      "sts");
  CHECK(s.secret == "S&K");  // entities decoded once
  for (const char* bad : {"", "[]", R"({"Version":2,"AccessKeyId":"A","SecretAccessKey":"S"})",
                          R"({"Version":1,"AccessKeyId":"A"})",
                          R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"soon"})"})
    CHECK_THROWS_AS(mb::io::aws::process_credentials(bad, "p"), mb::Error);
  CHECK_THROWS_AS(mb::io::aws::metadata_credentials(R"({"Code":"Failure","AccessKeyId":"A"})", "m"), mb::Error);
  CHECK_THROWS_AS(mb::io::aws::sts_credentials("<Error/>", "sts"), mb::Error);
}

TEST_CASE("aws chain: the environment first, then the profile's files, the credentials file before config") {
  Home home;
  home.write(".aws/credentials", "[default]\naws_access_key_id=AKFILE\naws_secret_access_key=SKFILE\n");
  home.write(".aws/config", "[default]\nregion=eu-west-3\naws_access_key_id=AKCFG\naws_secret_access_key=SKCFG\n"
                            "[profile cfg]\naws_access_key_id=AKCFG2\naws_secret_access_key=SKCFG2\n");
  auto env = home.chain({{"AWS_ACCESS_KEY_ID", "AKENV"}, {"AWS_SECRET_ACCESS_KEY", "SKENV"}, {"AWS_PROFILE", "cfg"}});
  CHECK(env->current()->key_id == "AKENV");  // the environment wins even over a named profile
  CHECK(env->current()->source == "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)");
  const auto file = home.chain();
  CHECK(file->current()->key_id == "AKFILE");
  CHECK(file->current()->source == "profile default in " + (home.path / ".aws/credentials").string());
  CHECK(file->region() == "eu-west-3");
  CHECK(home.chain({{"AWS_DEFAULT_REGION", "us-west-1"}})->region() == "us-west-1");
  CHECK(home.chain({{"AWS_REGION", "ap-south-1"}, {"AWS_DEFAULT_REGION", "us-west-1"}})->region() == "ap-south-1");
  CHECK(home.chain({{"AWS_PROFILE", "cfg"}})->current()->key_id == "AKCFG2");
  CHECK(home.chain({{"AWS_PROFILE", "cfg"}})->region() == "us-east-1");
}

TEST_CASE("aws chain: files named by the environment, and a profile that is nowhere") {
  Home home;
  home.write("creds", "[team]\naws_access_key_id=AKT\naws_secret_access_key=SKT\n");
  home.write("conf", "[profile team]\nregion=sa-east-1\n");
  const auto named = home.chain({{"AWS_SHARED_CREDENTIALS_FILE", (home.path / "creds").string()},
                                 {"AWS_CONFIG_FILE", (home.path / "conf").string()}, {"AWS_PROFILE", "team"}});
  CHECK(named->current()->key_id == "AKT");
  CHECK(named->region() == "sa-east-1");
  const std::string missing = error_of(*home.chain({{"AWS_PROFILE", "nosuch"}}));
  CHECK(missing.find("AWS_PROFILE: the profile \"nosuch\" is in neither") == 0);
}

TEST_CASE("aws chain: nothing found lists where it looked, and --no-sign-request asks nothing") {
  Home home;
  const std::string none = error_of(*home.chain());
  CHECK(none.find("no AWS credentials for s3:// requests: looked in the environment") == 0);
  CHECK(none.find("profile default in the credentials file") != std::string::npos);
  CHECK(none.find("the instance metadata service") != std::string::npos);
  CHECK(none.find("--no-sign-request") != std::string::npos);
  home.write(".aws/config", "[default]\nregion=eu-north-1\n");
  const auto anonymous = mb::io::aws::credential_chain(
      mb::Settings({{"HOME", home.path.string()}, {"AWS_EC2_METADATA_DISABLED", "true"}}), {.no_sign_request = true});
  CHECK_FALSE(anonymous->current());
  CHECK(anonymous->region() == "eu-north-1");
}

TEST_CASE("aws chain: half-given keys are an error naming what is missing, never a secret") {
  Home home;
  CHECK(error_of(*home.chain({{"AWS_ACCESS_KEY_ID", "AK"}})).find("AWS_SECRET_ACCESS_KEY") != std::string::npos);
  const std::string e = error_of(*home.chain({{"AWS_SECRET_ACCESS_KEY", "SECRETVALUE"}}));
  CHECK(e.find("AWS_ACCESS_KEY_ID") != std::string::npos);
  CHECK(e.find("SECRETVALUE") == std::string::npos);
  home.write(".aws/credentials", "[default]\naws_secret_access_key=SECRETVALUE\n");
  CHECK(error_of(*home.chain()).find("aws_secret_access_key is set but aws_access_key_id is not") !=
        std::string::npos);
  CHECK(error_of(*home.chain()).find("SECRETVALUE") == std::string::npos);
}

TEST_CASE("aws chain: credential_process runs without a shell, before the config file's keys") {
  Home home;
  const fs::path helper =
      home.script("helper.sh", "[ \"$1\" = \"a b\" ] || exit 3\n"
                               "echo '{\"Version\": 1, \"AccessKeyId\": \"AKPROC\", \"SecretAccessKey\": \"SKPROC\", "
                               "\"SessionToken\": \"TPROC\", \"Expiration\": \"2099-01-01T00:00:00Z\"}'\n");
  home.write(".aws/config", "[default]\ncredential_process = " + helper.string() +
                                " 'a b'\naws_access_key_id=AKCFG\naws_secret_access_key=SKCFG\n"
                                "[profile broken]\ncredential_process = " + helper.string() + " other\n");
  const auto c = home.chain()->current();
  CHECK(c->key_id == "AKPROC");
  CHECK(c->token == "TPROC");
  CHECK(c->source == "credential_process of profile default");
  const std::string e = error_of(*home.chain({{"AWS_PROFILE", "broken"}}));
  CHECK(e.find("credential_process of profile broken") == 0);
  CHECK(e.find("exit status 3") != std::string::npos);
}

TEST_CASE("aws chain: credential_process sees the run's settings as its environment") {
  Home home;
  const fs::path helper =
      home.script("helper.sh", "[ -z \"$MB_TEST_NOT_IN_SETTINGS\" ] || exit 4\n"
                               "echo \"{\\\"Version\\\": 1, \\\"AccessKeyId\\\": \\\"$MB_TEST_KEY\\\", "
                               "\\\"SecretAccessKey\\\": \\\"SK\\\"}\"\n");
  home.write(".aws/config", "[default]\ncredential_process = " + helper.string() + "\n");
  ::setenv("MB_TEST_NOT_IN_SETTINGS", "1", 1);  // the process's own environment: not the run's settings
  const auto c = home.chain({{"MB_TEST_KEY", "AKFROMSETTINGS"}, {"PATH", "/usr/bin:/bin"}})->current();
  ::unsetenv("MB_TEST_NOT_IN_SETTINGS");
  CHECK(c->key_id == "AKFROMSETTINGS");
}

TEST_CASE("aws chain: an advised refresh holds no other caller, the held credentials serve meanwhile") {
  Home home;
  const fs::path dir = home.path;
  // Expiring in 12 minutes: within the advised window (15), not yet the required one (10).
  const std::time_t soon = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() +
                                                                std::chrono::minutes(12));
  char expires[32];
  std::strftime(expires, sizeof expires, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&soon));
  const std::string count = (dir / "count").string();
  const fs::path helper = home.script(
      "helper.sh", "n=$(cat " + count + " 2>/dev/null || echo 0)\necho $((n + 1)) > " + count + "\n" +
                       "if [ \"$n\" = 0 ]; then echo '{\"Version\": 1, \"AccessKeyId\": \"AKOLD\", " +
                       "\"SecretAccessKey\": \"S\", \"Expiration\": \"" + expires + "\"}'; exit 0; fi\n" +
                       "touch " + (dir / "refreshing").string() + "\n" +  // then waits for the test's go
                       "while [ ! -e " + (dir / "go").string() + " ]; do sleep 0.05; done\n" +
                       "echo '{\"Version\": 1, \"AccessKeyId\": \"AKNEW\", \"SecretAccessKey\": \"S\", " +
                       "\"Expiration\": \"2099-01-01T00:00:00Z\"}'\n");
  home.write(".aws/config", "[default]\ncredential_process = " + helper.string() + "\n");
  const auto chain = home.chain({{"PATH", "/usr/bin:/bin"}});
  CHECK(chain->current()->key_id == "AKOLD");
  auto refreshing = std::async(std::launch::async, [&] { return chain->current()->key_id; });
  // The refresh waits in the helper (the deadline only bounds a run that never gets there).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(dir / "refreshing") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!fs::exists(dir / "refreshing")) std::ofstream(dir / "go").flush();  // lets the helper end before failing
  REQUIRE(fs::exists(dir / "refreshing"));
  auto other = std::async(std::launch::async, [&] { return chain->current()->key_id; });
  const bool served = other.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  std::ofstream(dir / "go").flush();
  CHECK(served);  // without waiting for the refresh
  CHECK(other.get() == "AKOLD");
  CHECK(refreshing.get() == "AKNEW");
  CHECK(chain->current()->key_id == "AKNEW");
}

TEST_CASE("aws chain: a source that is there but cannot serve is an error before any request") {
  Home home;
  const std::string role = "[default]\nrole_arn = arn:aws:iam::1:role/r\n";
  home.write(".aws/config", role + "source_profile = base\nmfa_serial = arn:aws:iam::1:mfa/u\n[profile base]\n"
                                   "aws_access_key_id = AK\naws_secret_access_key = SK\n");
  CHECK(error_of(*home.chain()).find("MFA code") != std::string::npos);
  home.write(".aws/config", role + "credential_source = Somewhere\n");
  CHECK(error_of(*home.chain()).find("credential_source \"Somewhere\" is not") != std::string::npos);
  home.write(".aws/config", role + "credential_source = Environment\nsource_profile = base\n");
  CHECK(error_of(*home.chain()).find("not both") != std::string::npos);
  home.write(".aws/config", role + "source_profile = nobody\n");
  CHECK(error_of(*home.chain()).find("its source_profile nobody is in neither") != std::string::npos);
  home.write(".aws/config", "[default]\nweb_identity_token_file = /nonexistent/token\n");
  CHECK(error_of(*home.chain()).find("without a role") != std::string::npos);

  Home plain;
  const std::string far = error_of(*plain.chain({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://192.0.2.1/creds"}}));
  CHECK(far.find("neither https nor a loopback") != std::string::npos);
}

TEST_CASE("aws chain: credentials that have expired already are refused, not sent") {
  Home home;
  const fs::path helper =
      home.script("old.sh", "echo '{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"S\", "
                            "\"SessionToken\": \"T\", \"Expiration\": \"2001-01-01T00:00:00Z\"}'\n");
  home.write(".aws/config", "[default]\ncredential_process = " + helper.string() + "\n");
  try {
    home.chain()->current();
    FAIL("expired credentials were taken");
  } catch (const mb::Error& e) {
    CHECK(e.exit_code() == 3);
    CHECK(std::string(e.what()) == "the credentials from credential_process of profile default have expired already");
  }
}
