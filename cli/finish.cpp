// microbatch finish: the manifest of a split written by shards (split --shard K/P).
#include <spdlog/spdlog.h>

#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "io/split/parts.hpp"
#include "io/store/store.hpp"
#include "specs/manifest.hpp"

namespace mb::cli {

void setup_finish(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "finish", "Write manifest.json for a split written by shards (split --shard K/P), once all have succeeded");
  sub->footer(
      "Example:\n"
      "  microbatch split batch.h5 -n 8 -o mb/ --shard 0/2   # and --shard 1/2, anywhere\n"
      "  microbatch finish mb/\n"
      "  checks mb/part-00000-of-00002.json and mb/part-00001-of-00002.json (same input, spec and options; every\n"
      "  file listed present at its recorded size) and writes mb/manifest.json, the one 'split -o mb/' writes;\n"
      "  the same for shards of 'split -o s3://BUCKET/PREFIX/': microbatch finish s3://BUCKET/PREFIX/");
  sub->add_option("dir", *dir, "output directory of the shards, or their s3://BUCKET/PREFIX/")
      ->required()
      ->check(local_output("dir", true));
  add_common_options(*sub);
  sub->callback([dir] {
    apply_common_options();
    // One process checks the parts and writes the manifest (under mpirun, split's rank 0 does it itself).
    if (team_launch("finish")) throw usage_error("finish: run it as one process, not as several tasks of a launcher");
    const auto place = io::store::open_store(*dir, process_settings());
    io::split::finish(*place);
    spdlog::info("finished the split in {}: wrote {}", *dir, place->shown(specs::kManifestName));
  });
}

}  // namespace mb::cli
