#include "io/split/upload.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "io/remote/settings.hpp"

namespace mb::io::split {
namespace {

RemoteAddress address_of(const RemoteOutput& out, const std::string& name) {
  return resolve_remote(out.prefix + name, out.settings.environment());
}

}  // namespace

std::string spool_directory(const RemoteOutput& out) {
  if (out.keep_local) return *out.keep_local;
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  return fmt::format("{}/microbatch-upload-{}-{:x}", temporary_directory(out.settings.environment()), ::getpid(),
                     stamp & 0xffffff);
}

publish::UploadPlan upload_plan(const RemoteOutput& out, const Spooled& files,
                                const std::vector<std::string>& earlier) {
  publish::UploadPlan plan;
  for (std::size_t i = 0; i < files.names.size(); ++i)
    plan.files.push_back({files.paths[i], address_of(out, files.names[i]), !out.keep_local});
  plan.manifest = address_of(out, files.last);
  for (const auto& old : earlier)
    if (std::find(files.names.begin(), files.names.end(), old) == files.names.end())
      plan.stale.push_back(address_of(out, old));
  plan.settings = remote::settings_from(out.settings.environment());
  plan.concurrency = out.uploads;
  if (!out.keep_local) plan.spool = files.spool;
  return plan;
}

}  // namespace mb::io::split
