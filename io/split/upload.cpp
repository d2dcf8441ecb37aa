#include "io/split/upload.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "core/error.hpp"
#include "io/publish/outputs.hpp"
#include "io/remote/listing.hpp"
#include "io/remote/upload.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {
namespace {

RemoteAddress address_of(const std::string& name) { return resolve_remote(name, std::getenv); }

}  // namespace

std::vector<std::string> claim_prefix(const RemoteOutput& out, bool force) {
  remote::Client client(remote::settings_from(std::getenv));
  std::vector<std::string> found;  // split outputs under their final names
  for (const auto& o : remote::list_prefix(client, resolve_listing(out.prefix, std::getenv)))
    if (publish::is_final_output(o.name)) found.push_back(o.name);
  if (found.empty()) return {};
  const bool finished = std::find(found.begin(), found.end(), specs::kManifestName) != found.end();
  if (!force)
    throw Error(fmt::format("{}: holds the output of an earlier split ({}); use --force to replace it",
                            shown_name(out.prefix), finished ? specs::kManifestName : found.front()));
  // The manifest at once, then part records (of shards, which no new file overwrites); the files once the new
  // manifest is up, unless the new split overwrites them.
  if (finished) remote::delete_object(client, address_of(out.prefix + specs::kManifestName));
  std::vector<std::string> earlier;
  for (const auto& name : found) {
    if (name == specs::kManifestName) continue;
    if (name.starts_with("part-"))
      remote::delete_object(client, address_of(out.prefix + name));
    else
      earlier.push_back(name);
  }
  return earlier;
}

std::string spool_directory(const RemoteOutput& out) {
  if (out.keep_local) return *out.keep_local;
  const char* tmp = std::getenv("TMPDIR");
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  return fmt::format("{}/microbatch-upload-{}-{:x}", tmp && *tmp ? tmp : "/tmp", ::getpid(), stamp & 0xffffff);
}

publish::UploadPlan upload_plan(const RemoteOutput& out, const Spooled& files,
                                const std::vector<std::string>& earlier) {
  publish::UploadPlan plan;
  for (std::size_t i = 0; i < files.names.size(); ++i)
    plan.files.push_back({files.paths[i], address_of(out.prefix + files.names[i]), !out.keep_local});
  plan.manifest = address_of(out.prefix + files.last);
  for (const auto& old : earlier)
    if (std::find(files.names.begin(), files.names.end(), old) == files.names.end())
      plan.stale.push_back(address_of(out.prefix + old));
  plan.settings = remote::settings_from(std::getenv);
  plan.concurrency = out.uploads;
  if (!out.keep_local) plan.spool = files.spool;
  return plan;
}

}  // namespace mb::io::split
