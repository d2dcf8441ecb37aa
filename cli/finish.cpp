// microbatch finish: the manifest of a split written by shards (split --shard K/P).
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/summary.hpp"
#include "core/remote.hpp"
#include "io/split/parts.hpp"
#include "io/store/store.hpp"
#include "specs/emit.hpp"
#include "specs/manifest.hpp"

namespace mb::cli {
namespace {

struct FinishCommand {
  std::string dir;
  bool json = false;
};

// finish --json (docs/schema/finish-summary.schema.json): the manifest
// written, and the files of the split it lists.
void print_finish_summary(const io::store::Store& place, const FinishCommand& cmd, const std::string& manifest,
                          const std::vector<std::string>& warnings, std::chrono::steady_clock::time_point start) {
  using json = nlohmann::ordered_json;
  const json recorded = json::parse(manifest);
  auto split_files = json::array();
  std::uint64_t split_bytes = 0;
  for (const auto& f : recorded.at("files")) {
    const std::uint64_t size = f.at("size").get<std::uint64_t>();
    split_files.push_back(
        {{"path", specs::printable_text(place.shown(f.at("name").get<std::string>()))}, {"bytes", size}});
    split_bytes += size;
  }
  const std::string written = place.shown(specs::kManifestName);
  json out{{"format", "microbatch-finish-summary"},
           {"version", 1},
           {"files", json::array({{{"path", specs::printable_text(written)}, {"bytes", manifest.size()}}})},
           {"bytes", manifest.size()},
           {"microbatches", recorded.at("chunks")},
           {"warnings", json::array()},
           {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()},
           {"output_dir", specs::printable_text(shown_name(cmd.dir))},
           {"split_files", split_files},
           {"split_bytes", split_bytes}};
  for (const auto& w : warnings) out["warnings"].push_back(specs::printable_text(w));
  print_summary(out);
}

void run_finish(const FinishCommand& cmd) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<WarningCapture> capture;
  if (cmd.json) capture.emplace();
  // One process checks the parts and writes the manifest (under mpirun, split's rank 0 does it itself).
  if (team_launch("finish")) throw usage_error("finish: run it as one process, not as several tasks of a launcher");
  const auto place = io::store::open_writable(cmd.dir, process_settings());
  const std::string manifest = io::split::finish(*place);
  spdlog::info("finished the split in {}: wrote {}", cmd.dir, place->shown(specs::kManifestName));
  if (capture) print_finish_summary(*place, cmd, manifest, capture->warnings(), start);
}

}  // namespace

void setup_finish(CLI::App& app) {
  auto cmd = std::make_shared<FinishCommand>();
  CLI::App* sub = app.add_subcommand(
      "finish", "Write manifest.json for a split written by shards (split --shard K/P), once all have succeeded");
  sub->footer(
      "Example:\n"
      "  microbatch split batch.h5 -n 8 -o mb/ --shard 0/2   # and --shard 1/2, anywhere\n"
      "  microbatch finish mb/\n"
      "  checks mb/part-00000-of-00002.json and mb/part-00001-of-00002.json (same input, spec and options; every\n"
      "  file listed present at its recorded size) and writes mb/manifest.json, the one 'split -o mb/' writes;\n"
      "  the same for shards of 'split -o s3://BUCKET/PREFIX/': microbatch finish s3://BUCKET/PREFIX/");
  sub->add_option("dir", cmd->dir, "output directory of the shards, or their s3://BUCKET/PREFIX/")
      ->required()
      ->check(local_output("dir", true));
  sub->add_flag("--json", cmd->json,
                "print a summary object on stdout: the manifest written with its size, microbatches, the split's "
                "files with their sizes, warnings, seconds");
  add_common_options(*sub);
  sub->callback([cmd] {
    apply_common_options();
    run_finish(*cmd);
  });
}

}  // namespace mb::cli
