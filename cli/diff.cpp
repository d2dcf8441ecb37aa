// microbatch diff: two HDF5 files (local or by URL) compared exactly; each
// difference on stdout, one line each ("PATH: DETAIL"), or a report with --json.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/summary.hpp"
#include "core/units.hpp"
#include "io/diff/diff.hpp"
#include "specs/emit.hpp"

namespace mb::cli {
namespace {

struct DiffCommand {
  std::string a, b;
  io::diff::Options options;
  bool json = false;
};

// docs/schema/diff-report.schema.json
nlohmann::ordered_json diff_report_json(const Source& a, const Source& b, const io::diff::Report& report,
                                   const DiffCommand& cmd, const std::vector<std::string>& warnings, double seconds) {
  using json = nlohmann::ordered_json;
  json differences = json::array();
  for (const auto& f : report.findings)
    differences.push_back({{"path", specs::printable_text(f.path)},
                           {"what", f.what},
                           {"detail", specs::printable_text(scrub_urls(f.detail))}});
  json shown = json::array();
  for (const auto& w : warnings) shown.push_back(specs::printable_text(w));
  return json{{"format", "microbatch-diff-report"},
              {"version", 1},
              {"a", specs::printable_text(a.shown())},
              {"b", specs::printable_text(b.shown())},
              {"storage", cmd.options.storage},
              {"same", report.same()},
              {"complete", report.complete},
              {"differences", std::move(differences)},
              {"objects", report.objects},
              {"bytes", report.bytes},
              {"warnings", std::move(shown)},
              {"seconds", seconds}};
}

void run_diff(const DiffCommand& cmd) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<WarningCapture> capture;
  if (cmd.json) capture.emplace();
  const Source a = input_source(cmd.a);
  const Source b = input_source(cmd.b);
  const io::diff::Report report = io::diff::compare(a, b, cmd.options);
  if (capture) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    print_summary(diff_report_json(a, b, report, cmd, capture->warnings(), seconds));
  } else {
    for (const auto& f : report.findings)
      std::fputs(fmt::format("{}: {}\n", specs::printable_text(f.path), scrub_urls(f.detail)).c_str(), stdout);
    std::fflush(stdout);
  }
  if (!report.same())
    throw Reported(fmt::format("{} and {} differ: {} difference{}{}", a.shown(), b.shown(),
                               report.complete ? std::to_string(report.findings.size())
                                               : fmt::format("the first {}", report.findings.size()),
                               report.findings.size() == 1 ? "" : "s",
                               report.complete ? "" : " shown (--limit 0 finds them all)"));
  spdlog::info("{} and {} are the same: {} objects, {} of values{}", a.shown(), b.shown(), report.objects,
               byte_text(static_cast<double>(report.bytes)), cmd.options.storage ? ", stored alike" : "");
}

}  // namespace

void setup_diff(CLI::App& app) {
  auto cmd = std::make_shared<DiffCommand>();
  CLI::App* sub = app.add_subcommand("diff", "Compare two HDF5 files exactly (what h5diff is not)");
  sub->footer(
      "Example:\n"
      "  microbatch diff batch.h5 merged.h5\n"
      "  exit 0 when both hold the same groups, datasets, datatypes, shapes, values (bit for bit; a NaN equals\n"
      "  the NaN of the same bits) and attributes; 1 listing the first differences by path, one per line");
  sub->add_option("a", cmd->a, "first file (a path, or an s3:// or http(s):// URL)")->required();
  sub->add_option("b", cmd->b, "second file")->required();
  sub->add_flag("--storage", cmd->options.storage,
                "also compare how datasets are stored: layout, chunk shape, filters, max dims");
  sub->add_option("--limit", cmd->options.limit, "stop after N differences (default 10; 0: find them all)")
      ->transform(whole_number("--limit"))
      ->type_name("N");
  sub->add_flag("--json", cmd->json,
                "print a report object on stdout: whether the files are the same, and each difference found");
  add_common_options(*sub);
  sub->callback([cmd] {
    apply_common_options();
    run_diff(*cmd);
  });
}

}  // namespace mb::cli
