#include "io/outputs.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "io/guard.hpp"
#include "specs/manifest.hpp"

namespace mb::io {
namespace {

namespace fs = std::filesystem;

std::string errno_text() { return std::strerror(errno); }

bool is_split_output(const std::string& name) {
  const bool h5 = name.ends_with(".h5");
  const bool microbatch = (name.rfind("microbatch-", 0) == 0 || name.rfind("rank-", 0) == 0) && h5;
  const bool temporary = name.rfind(".microbatch-", 0) == 0 || name.rfind(".rank-", 0) == 0 ||
                         name.rfind(".manifest.json.tmp-", 0) == 0;
  return microbatch || temporary || name == specs::kManifestName;
}

}  // namespace

std::string temporary_name(const std::string& final_path) {
  const fs::path p(final_path);
  const std::string name = fmt::format(".{}.tmp-{}", p.filename().string(), getpid());
  return (p.parent_path() / name).string();
}

std::string AtomicOutputs::add(const std::string& final_path) {
  entries_.push_back({temporary_name(final_path), final_path, false});
  register_temporary(entries_.back().temp);
  return entries_.back().temp;
}

void AtomicOutputs::publish() {
  for (auto& e : entries_) {
    if (std::rename(e.temp.c_str(), e.final_path.c_str()) != 0)
      throw Error(e.final_path + ": cannot rename the finished output into place: " + errno_text());
    e.published = true;
  }
}

AtomicOutputs::~AtomicOutputs() {
  for (const auto& e : entries_) unregister_temporary(e.temp);
  if (kept_) return;
  for (const auto& e : entries_) std::remove((e.published ? e.final_path : e.temp).c_str());
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string temp = temporary_name(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(path + ": cannot write: " + errno_text());
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = errno_text();
      ::close(fd);
      std::remove(temp.c_str());
      throw Error(path + ": cannot write: " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    const std::string why = errno_text();
    std::remove(temp.c_str());
    throw Error(path + ": cannot write: " + why);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    std::remove(temp.c_str());
    throw Error(path + ": cannot rename into place: " + why);
  }
}

void prepare_output_dir(const std::string& dir, bool force, const std::string& input) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error(dir + ": the output path exists and is not a directory");
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create the output directory: " + ec.message());
  std::vector<fs::path> earlier;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (is_split_output(entry.path().filename().string())) earlier.push_back(entry.path());
  if (ec) throw Error(dir + ": cannot list the output directory: " + ec.message());
  if (earlier.empty()) return;
  for (const auto& p : earlier)
    if (fs::equivalent(p, input, ec))
      throw Error(dir + ": the input " + input + " has a microbatch file name in the output directory; choose "
                  "another output directory");
  if (!force)
    throw Error(dir + ": holds the output of an earlier split (" + earlier.front().filename().string() +
                "); use --force to replace it");
  std::sort(earlier.begin(), earlier.end(), [](const fs::path& a, const fs::path& b) {
    return (a.filename() == specs::kManifestName) > (b.filename() == specs::kManifestName);
  });
  for (const auto& p : earlier)
    if (!fs::remove(p, ec) || ec) throw Error(p.string() + ": cannot remove the earlier output: " + ec.message());
}

void check_output_file(const std::string& output, const std::vector<std::string>& inputs, bool force) {
  std::error_code ec;
  if (fs::is_directory(output, ec)) throw Error(output + ": the output path is a directory");
  if (!fs::exists(output, ec)) return;
  for (const auto& in : inputs)
    if (fs::equivalent(in, output, ec)) throw Error(output + ": the output would replace input " + in);
  if (!force) throw Error(output + ": the output exists; use --force to replace it");
}

}  // namespace mb::io
