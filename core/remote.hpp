#pragma once
// Inputs named by URL (s3://, http://, https://): where a name points, how
// requests to it are signed, how it is shown in messages, and names
// relative to it. No request goes to the place named: the settings are
// passed in, and credentials come from settings.aws(), whose source may run
// a credential process or ask a metadata endpoint (resolve_remote).
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/credentials.hpp"
#include "core/launcher.hpp"  // Environment
#include "core/settings.hpp"

namespace mb {

// s3://, http:// or https:// (the scheme in any case).
bool is_remote(std::string_view name);
// The scheme of a name that is a URL, lower-cased: RFC 3986's letter, then
// letters, digits, '+', '-' or '.', right before "://" ("gs" for
// gs://bkt/x). None for a local path, even one holding ':' (./a:b, a:b).
std::optional<std::string> url_scheme(std::string_view name);
// A place named on the command line (a file, a directory, a prefix) is a
// local path or a URL of a scheme microbatch reads or writes: a name with any
// other scheme is a usage error naming that scheme and the ones taken, so
// that it never becomes a local path such as ./gs:/bkt/x/. `option` (as
// --help spells it, or empty) starts the message.
void check_place(std::string_view name, std::string_view option = {});
// s3:// (in any case).
bool is_s3(std::string_view name);

// How requests to an s3:// object are signed (AWS Signature V4): for a
// region and a service, with the credentials the source holds when each
// request is sent (temporary ones are refreshed in a long run).
struct Signing {
  std::string region;
  std::string service = "s3";
  std::shared_ptr<const CredentialSource> credentials;
};

// Where to send the requests for a remote name.
struct RemoteAddress {
  std::string name;               // as given: s3://bkt/key or the URL
  std::string url;                // the http(s) URL requested
  std::optional<Signing> signing;  // none: anonymous
  // The environment that resolved it: how its requests behave (timeouts,
  // the CA) and where a local copy of it goes are read from it too.
  Environment env;
  S3Options s3{};  // an s3:// name's: what its requests ask of the store
};

// Resolves `name` (is_remote). s3://BUCKET/KEY goes to AWS_ENDPOINT_URL_S3,
// else AWS_ENDPOINT_URL, path-style (ENDPOINT/BUCKET/KEY, as S3-compatible
// stores expect), else to AWS virtual-hosted style
// (https://BUCKET.s3.REGION.amazonaws.com/KEY). It is signed with the
// credentials of settings.aws(), looked up now (a missing or failing
// source fails here, before any request), anonymous only when that source
// says so. http(s) URLs are requested as given, unsigned (a presigned URL
// carries its signature in its query). Throws mb::Error (a usage error)
// for a malformed name.
RemoteAddress resolve_remote(std::string_view name, const Settings& settings);

// A prefix s3://BUCKET/PREFIX/ (or s3://BUCKET/) to list: the bucket's
// address, which ListObjectsV2 requests, and the keys' prefix ("PREFIX/").
// Throws mb::Error (a usage error) for anything else.
struct S3Listing {
  RemoteAddress bucket;
  std::string prefix;
};
S3Listing resolve_listing(std::string_view name, const Settings& settings);

// `name` as messages show it: the query (which can hold a presigned URL's
// signature and token) and any user:password@ replaced. Any other name
// (a local path) as it is.
std::string shown_name(std::string_view name);

// `text` (a message) with every URL in it shown as shown_name shows it.
std::string scrub_urls(std::string_view text);

// The name of `file` in the same "directory" as the remote `name`
// (s3://bkt/dir/manifest.json, "microbatch-00000.h5" ->
// s3://bkt/dir/microbatch-00000.h5); a query on `name` is not carried over.
std::string sibling(std::string_view name, std::string_view file);

// The remote `name` of a split directory (ending in "/") or of its
// manifest (ending in "/" + `manifest`): the manifest's name, else none.
std::optional<std::string> remote_manifest_name(std::string_view name, std::string_view manifest);

}  // namespace mb
