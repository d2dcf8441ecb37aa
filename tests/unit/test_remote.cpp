#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/remote.hpp"

namespace {

using Vars = std::map<std::string, std::string>;

// Settings of `vars` whose credential source answers `keys` (none: anonymous) and `region`.
mb::Settings settings(Vars vars, std::optional<mb::Credentials> keys = {}, std::string region = "us-east-1") {
  return mb::Settings(std::move(vars)).with_aws(std::make_shared<mb::FixedCredentials>(std::move(keys), region));
}

mb::Credentials keys(std::string token = {}) { return mb::Credentials{"AK", "SK", std::move(token), {}, "a test"}; }

mb::RemoteAddress resolve(const std::string& name, Vars vars, std::optional<mb::Credentials> c = {},
                          std::string region = "us-east-1") {
  return mb::resolve_remote(name, settings(std::move(vars), std::move(c), std::move(region)));
}

mb::S3Listing listing(const std::string& name, Vars vars, std::optional<mb::Credentials> c = {}) {
  return mb::resolve_listing(name, settings(std::move(vars), std::move(c)));
}

}  // namespace

TEST_CASE("remote: a prefix is listed at its bucket's URL, in each addressing style") {
  const auto at_aws = listing("s3://bkt/runs/mb/", {}, keys());
  CHECK(at_aws.bucket.url == "https://bkt.s3.us-east-1.amazonaws.com/");
  CHECK(at_aws.prefix == "runs/mb/");
  CHECK(at_aws.bucket.signing);
  CHECK(listing("s3://b.k.t/mb/", {}).bucket.url == "https://s3.us-east-1.amazonaws.com/b.k.t");
  const auto at_endpoint = listing("s3://bkt/", {{"AWS_ENDPOINT_URL", "http://127.0.0.1:9000/"}});
  CHECK(at_endpoint.bucket.url == "http://127.0.0.1:9000/bkt");
  CHECK(at_endpoint.prefix.empty());
  CHECK_FALSE(at_endpoint.bucket.signing);
  for (const char* bad : {"s3://bkt/mb", "s3://B/mb/", "https://host/mb/", "s3:///mb/"})
    CHECK_THROWS_AS(listing(bad, {}), mb::Error);
}

TEST_CASE("remote: which names are URLs") {
  CHECK(mb::is_remote("s3://bkt/key.h5"));
  CHECK(mb::is_remote("HTTPS://host/x.h5"));
  CHECK(mb::is_remote("http://host/x.h5"));
  CHECK_FALSE(mb::is_remote("data/s3://x.h5"));
  CHECK_FALSE(mb::is_remote("file:///tmp/x.h5"));
  CHECK_FALSE(mb::is_remote("batch.h5"));
}

TEST_CASE("remote: a name with a scheme is a URL, and one microbatch does not take is refused") {
  CHECK(mb::url_scheme("gs://bkt/x/") == "gs");
  CHECK(mb::url_scheme("ABFSS://c@a.dfs.core.windows.net/x") == "abfss");
  CHECK(mb::url_scheme("svn+ssh://h/x") == "svn+ssh");
  for (const char* path : {"a:b", "./a:b", "dir/gs://x", "1x://y", "://x", "-x://y", "a b://c", "batch.h5"})
    CHECK_FALSE(mb::url_scheme(path));
  for (const char* taken : {"s3://bkt/k", "HTTP://h/x", "https://h/x", "a:b", "./gs:/bkt"})
    CHECK_NOTHROW(mb::check_place(taken));
  try {
    mb::check_place("gs://bkt/x/", "-o/--output");
    FAIL("gs:// taken");
  } catch (const mb::Error& e) {
    CHECK(e.exit_code() == 2);
    CHECK(std::string(e.what()).starts_with("-o/--output: gs://bkt/x/: microbatch does not read or write gs://"));
  }
}

TEST_CASE("remote: s3:// goes to AWS, virtual-hosted, in the credential source's region") {
  CHECK(resolve("s3://bkt/a/b.h5", {}).url == "https://bkt.s3.us-east-1.amazonaws.com/a/b.h5");
  CHECK(resolve("s3://bkt/a/b.h5", {}, {}, "eu-west-3").url == "https://bkt.s3.eu-west-3.amazonaws.com/a/b.h5");
  const auto signed_ = resolve("s3://bkt/b.h5", {}, keys(), "eu-west-3");
  CHECK(signed_.url == "https://bkt.s3.eu-west-3.amazonaws.com/b.h5");
  REQUIRE(signed_.signing);
  CHECK(signed_.signing->region == "eu-west-3");
  CHECK(signed_.signing->service == "s3");
  // A dotted bucket would not match the wildcard certificate of virtual hosts.
  CHECK(resolve("s3://my.bkt/b.h5", {}).url == "https://s3.us-east-1.amazonaws.com/my.bkt/b.h5");
}

TEST_CASE("remote: an endpoint override is path-style, and keys are percent-encoded once") {
  const Vars vars{{"AWS_ENDPOINT_URL", "http://127.0.0.1:9000/"}};
  CHECK(resolve("s3://bkt/dir/batch one+1.h5", vars).url == "http://127.0.0.1:9000/bkt/dir/batch%20one%2B1.h5");
  CHECK(resolve("s3://bkt/k.h5", {{"AWS_ENDPOINT_URL", "http://a:1"}, {"AWS_ENDPOINT_URL_S3", "https://b:2"}}).url ==
        "https://b:2/bkt/k.h5");
  CHECK_THROWS_AS(resolve("s3://bkt/k.h5", {{"AWS_ENDPOINT_URL", "127.0.0.1:9000"}}), mb::Error);
}

TEST_CASE("remote: an s3:// name is signed with its source's credentials, asked when it is resolved") {
  CHECK_FALSE(resolve("s3://bkt/k.h5", {}).signing);  // the source answers anonymous
  const auto with_token = resolve("s3://bkt/k.h5", {}, keys("T"));
  REQUIRE(with_token.signing);
  REQUIRE(with_token.signing->credentials->current());
  CHECK(with_token.signing->credentials->current()->token == "T");

  // A source that finds nothing fails the name's resolution, before any request.
  struct Nowhere final : mb::CredentialSource {
    std::optional<mb::Credentials> current() const override { throw mb::usage_error("no AWS credentials"); }
    std::string region() const override { return "us-east-1"; }
  };
  const mb::Settings none = mb::Settings().with_aws(std::make_shared<Nowhere>());
  CHECK_THROWS_WITH_AS(mb::resolve_remote("s3://bkt/k.h5", none), "no AWS credentials", mb::Error);
  CHECK_THROWS_WITH_AS(mb::resolve_listing("s3://bkt/p/", none), "no AWS credentials", mb::Error);
  CHECK_FALSE(mb::resolve_remote("https://h/x.h5", none).signing);  // an http(s) URL asks nothing
  // Settings without a source cannot resolve s3:// at all (cli/ installs the chain first).
  CHECK_THROWS_AS(mb::resolve_remote("s3://bkt/k.h5", mb::Settings()), mb::Error);
}

TEST_CASE("remote: http(s) URLs are requested as given, unsigned") {
  const auto a = resolve("https://host:8443/d/x.h5?X-Amz-Signature=abc", {}, keys());
  CHECK(a.url == "https://host:8443/d/x.h5?X-Amz-Signature=abc");
  CHECK_FALSE(a.signing);
  CHECK_THROWS_AS(resolve("http:///x.h5", {}), mb::Error);
}

TEST_CASE("remote: malformed s3 names are refused") {
  for (const char* name : {"s3://", "s3://bkt", "s3://bkt/", "s3://Bad_Bucket/k", "s3://bkt/dir/"})
    CHECK_THROWS_AS(resolve(name, {}), mb::Error);
}

TEST_CASE("remote: shown names hide queries and user information") {
  CHECK(mb::shown_name("https://h/x.h5?X-Amz-Security-Token=SECRET") == "https://h/x.h5?...");
  CHECK(mb::shown_name("http://user:pw@h:80/x.h5") == "http://...@h:80/x.h5");
  CHECK(mb::shown_name("s3://bkt/x.h5") == "s3://bkt/x.h5");
  CHECK(mb::scrub_urls("https://h/x.h5?sig=SECRET: HTTP 403 and http://u:pw@h/y?t=T, again") ==
        "https://h/x.h5?...: HTTP 403 and http://...@h/y?..., again");
  CHECK(mb::scrub_urls("no url here") == "no url here");
}

TEST_CASE("remote: siblings and manifests of a remote split directory") {
  CHECK(mb::sibling("s3://bkt/dir/manifest.json", "microbatch-00000.h5") == "s3://bkt/dir/microbatch-00000.h5");
  CHECK(mb::sibling("https://h/d/manifest.json?sig=1", "m.h5") == "https://h/d/m.h5");
  CHECK(mb::remote_manifest_name("https://h/d/", "manifest.json") == "https://h/d/manifest.json");
  CHECK(mb::remote_manifest_name("https://h/d/manifest.json", "manifest.json") == "https://h/d/manifest.json");
  CHECK_FALSE(mb::remote_manifest_name("https://h/d/my-manifest.json", "manifest.json"));
  CHECK_FALSE(mb::remote_manifest_name("https://h/d/microbatch-00000.h5", "manifest.json"));
}
