#include "io/split/upload.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "core/error.hpp"
#include "io/remote/upload.hpp"
#include "specs/manifest.hpp"

namespace mb::io::split {
namespace {

RemoteAddress address_of(const std::string& name) { return resolve_remote(name, std::getenv); }

}  // namespace

std::vector<std::string> claim_prefix(const RemoteOutput& out, bool force) {
  const std::string name = out.prefix + specs::kManifestName;
  const RemoteAddress manifest = address_of(name);
  remote::Client client(remote::settings_from(std::getenv));
  const auto text = remote::get_text(client, manifest);
  if (!text) return {};
  if (!force)
    throw Error(fmt::format("{}: holds the output of an earlier split ({}); use --force to replace it",
                            shown_name(out.prefix), specs::kManifestName));
  std::vector<std::string> earlier;
  try {
    for (const auto& f : specs::parse_manifest(*text, shown_name(name)).files) earlier.push_back(f.name);
  } catch (const Error& e) {
    spdlog::warn("{}; only its manifest is replaced", e.what());
  }
  remote::delete_object(client, manifest);
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
  const auto spooled = std::find_if(files.paths.begin(), files.paths.end(), [](const auto& p) { return !p.empty(); });
  if (!out.keep_local && spooled != files.paths.end())
    plan.spool = std::filesystem::path(*spooled).parent_path().string();
  return plan;
}

}  // namespace mb::io::split
