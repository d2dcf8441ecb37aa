// microbatch verify: a split directory (local or by URL) checked against its manifest, without merging.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/summary.hpp"
#include "core/remote.hpp"
#include "core/units.hpp"
#include "io/store/store.hpp"
#include "io/verify/verify.hpp"
#include "specs/emit.hpp"
#include "specs/manifest.hpp"

namespace mb::cli {
namespace {

struct VerifyCommand {
  std::string target;
  bool json = false;
};

struct Run {
  std::vector<std::string> warnings;
  std::chrono::steady_clock::time_point start;
};

// docs/schema/verify-report.schema.json
nlohmann::ordered_json verify_report_json(const Source& target, const io::verify::Report& report, const Run& run) {
  using json = nlohmann::ordered_json;
  json files = json::array();
  for (const auto& f : report.files) {
    json file{{"name", specs::printable_text(f.name)}, {"bytes", f.size}, {"status", problem_name(f.problem)}};
    if (!f.message.empty()) file["message"] = specs::printable_text(scrub_urls(f.message));
    files.push_back(std::move(file));
  }
  json extra = json::array();
  for (const auto& name : report.extra) extra.push_back(specs::printable_text(name));
  json out{{"format", "microbatch-verify-report"},
           {"version", 1},
           {"target", specs::printable_text(target.shown())},
           {"manifest", specs::printable_text(scrub_urls(report.manifest))},
           {"split_id", report.split_id},
           {"intact", report.intact()},
           {"files", std::move(files)},
           {"extra", std::move(extra)},
           {"listed", report.listed}};
  json warnings = json::array();
  for (const auto& w : run.warnings) warnings.push_back(specs::printable_text(w));
  out["warnings"] = std::move(warnings);
  out["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.start).count();
  return out;
}

void run_verify(const VerifyCommand& cmd) {
  Run run{{}, std::chrono::steady_clock::now()};
  std::optional<WarningCapture> capture;
  if (cmd.json) capture.emplace();
  const Source target = input_source(manifest_of_prefix(cmd.target));
  const std::optional<io::store::Member> split = io::store::open_split(target);
  const io::verify::Report report =
      io::verify::verify(target, split, std::max(1u, std::thread::hardware_concurrency()));
  std::uint64_t bad = 0;
  std::uint64_t bytes = 0;
  for (const auto& f : report.files) {
    bytes += f.size;
    if (f.message.empty()) continue;
    spdlog::error("{}", scrub_urls(f.message));
    ++bad;
  }
  for (const auto& name : report.extra)
    spdlog::error("{}: not listed in {}: a file of another split, which a glob of the split's files would pick up",
                  split->store->shown(name),
                  report.manifest);
  if (!report.listed)
    spdlog::info("{}: {}: files besides the manifest's are not looked for", target.shown(),
                 scrub_urls(report.unlisted));
  if (capture) {
    run.warnings = capture->warnings();
    print_summary(verify_report_json(target, report, run));
  }
  if (!report.intact())
    throw Reported(fmt::format("{}: not intact: {} of {} files missing or changed, {} files not listed", target.shown(),
                               bad, report.files.size(), report.extra.size()));
  spdlog::info("{}: intact: {} files, {}: sizes, digests and rows as {} records", target.shown(), report.files.size(),
               byte_text(static_cast<double>(bytes)), scrub_urls(report.manifest));
}

}  // namespace

void setup_verify(CLI::App& app) {
  auto cmd = std::make_shared<VerifyCommand>();
  CLI::App* sub = app.add_subcommand("verify", "Check a split directory against its manifest, without merging");
  sub->footer(
      "Example:\n"
      "  microbatch verify mb/\n"
      "  checks that every file mb/manifest.json lists is there with its size, content digest and rows, and that\n"
      "  no other microbatch file is; exit 0 when intact, 1 naming each file that is not");
  sub->add_option("dir", cmd->target, "split directory, or its URL (s3://BUCKET/PREFIX/, https://HOST/DIR/)")
      ->required();
  sub->add_flag("--json", cmd->json,
                "print a report object on stdout: each file with its status, files not listed, whether it is intact");
  add_common_options(*sub);
  sub->callback([cmd] {
    apply_common_options();
    run_verify(*cmd);
  });
}

}  // namespace mb::cli
