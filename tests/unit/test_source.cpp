#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/source.hpp"

namespace {

using Vars = std::map<std::string, std::string>;

// Settings of `vars`, whose s3:// requests are anonymous.
mb::Settings environment(const Vars& vars) {
  return mb::Settings(vars).with_aws(std::make_shared<mb::FixedCredentials>(std::nullopt, "us-east-1"));
}

}  // namespace

TEST_CASE("source: a local path is itself, shown as given") {
  const Vars vars;
  const mb::Source s = mb::Source::resolve("dir/a?b.h5", environment(vars));
  CHECK_FALSE(s.is_remote());
  CHECK(s.name() == "dir/a?b.h5");
  CHECK(s.shown() == "dir/a?b.h5");  // a '?' in a local name is part of it
  CHECK(s.file_name() == "a?b.h5");
  CHECK(s.beside("manifest.json").name() == "dir/manifest.json");
  CHECK(mb::Source::local("x.h5").beside("manifest.json").name() == "manifest.json");
}

TEST_CASE("source: a URL is resolved once, shown without its query") {
  const Vars vars{{"AWS_ENDPOINT_URL", "http://127.0.0.1:9000"}};
  const mb::Source s = mb::Source::resolve("s3://bkt/run/microbatch-00001.h5", environment(vars));
  REQUIRE(s.is_remote());
  CHECK(s.address().url == "http://127.0.0.1:9000/bkt/run/microbatch-00001.h5");
  CHECK(s.file_name() == "microbatch-00001.h5");
  const mb::Source m = s.beside("manifest.json");
  REQUIRE(m.is_remote());
  CHECK(m.address().url == "http://127.0.0.1:9000/bkt/run/manifest.json");  // resolved alike

  const mb::Source p = mb::Source::resolve("https://h/d/x.h5?X-Amz-Signature=secret", environment(vars));
  CHECK(p.shown() == "https://h/d/x.h5?...");
  CHECK(p.file_name() == "x.h5");
  CHECK(p.beside("manifest.json").name() == "https://h/d/manifest.json");  // the query signs one object only
}

TEST_CASE("source: a malformed URL is a usage error before anything is read") {
  const Vars vars;
  for (const char* name : {"https:///x.h5", "s3://bkt/", "s3://Bad_Bucket/x.h5"}) {
    try {
      mb::Source::resolve(name, environment(vars));
      FAIL("a malformed name was taken: ", name);
    } catch (const mb::Error& e) {
      CHECK(e.exit_code() == 2);
    }
  }
}
