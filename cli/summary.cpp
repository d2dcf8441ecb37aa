#include "cli/summary.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "cli/settings.hpp"
#include "core/launcher.hpp"
#include "specs/emit.hpp"

namespace mb::cli {

struct WarningCapture::Sink : spdlog::sinks::base_sink<std::mutex> {
  std::vector<std::string> messages;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (msg.level == spdlog::level::warn) messages.emplace_back(msg.payload.begin(), msg.payload.end());
  }
  void flush_() override {}
};

// The logger lets warnings through to this sink; its other sinks keep the
// level the logger had, so stderr is unchanged.
WarningCapture::WarningCapture() : sink_(std::make_shared<Sink>()) {
  auto logger = spdlog::default_logger();
  level_ = logger->level();
  for (auto& s : logger->sinks()) s->set_level(std::max(s->level(), logger->level()));
  sink_->set_level(spdlog::level::warn);
  logger->sinks().push_back(sink_);
  logger->set_level(std::min(logger->level(), spdlog::level::warn));
}

WarningCapture::~WarningCapture() {
  auto logger = spdlog::default_logger();
  auto& sinks = logger->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  logger->set_level(static_cast<spdlog::level::level_enum>(level_));
}

std::vector<std::string> WarningCapture::warnings() const {
  return sink_->messages;  // logged from this thread only
}

nlohmann::ordered_json summary_json(const Summary& s, const nlohmann::ordered_json& extra) {
  using json = nlohmann::ordered_json;
  json out;
  out["format"] = "microbatch-" + s.command + "-summary";
  out["version"] = 1;
  auto& files = out["files"] = json::array();
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < s.files.size(); ++i) {
    files.push_back({{"path", specs::printable_text(s.files[i])}, {"bytes", s.sizes.at(i)}});
    bytes += s.sizes.at(i);
  }
  out["bytes"] = bytes;
  out["data_bytes"] = s.data_bytes;
  out["datasets"] = s.datasets;
  out["microbatches"] = s.microbatches;
  auto& warnings = out["warnings"] = json::array();
  for (const auto& w : s.warnings) warnings.push_back(specs::printable_text(w));
  out["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.start).count();
  for (const auto& [key, value] : extra.items()) out[key] = value;
  return out;
}

void print_summary(const nlohmann::ordered_json& summary) {
  std::printf("%s\n", summary.dump(2).c_str());
  std::fflush(stdout);
}

bool failure_json_wanted(int argc, char** argv) {
  bool asked = false;
  for (int i = 2; i < argc && std::string_view(argv[i]) != "--"; ++i)
    asked = asked || std::string_view(argv[i]) == "--json";
  const auto launch = detect_launch(process_settings().environment());
  return asked && (!launch || launch->rank == 0);
}

void print_failure(const std::string& message, int exit_status, const Where& where) {
  nlohmann::ordered_json error{{"message", specs::printable_text(message)}, {"exit_status", exit_status}};
  if (!where.file.empty()) error["path"] = specs::printable_text(where.file);
  if (!where.object.empty()) error["object"] = specs::printable_text(where.object);
  print_summary({{"format", "microbatch-error"}, {"version", 1}, {"error", error}});
}

}  // namespace mb::cli
