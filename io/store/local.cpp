#include "io/store/local.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "io/publish/discard.hpp"
#include "io/publish/leftovers.hpp"
#include "io/publish/outputs.hpp"
#include "io/store/place.hpp"
#include "io/store/written.hpp"
#include "specs/file_names.hpp"
#include "specs/journal.hpp"

namespace mb::io::store {
namespace {
namespace fs = std::filesystem;

// A file's modification time as S3 listings give theirs (2026-12-07T14:51:27Z); empty when unknown.
std::string modified_text(const fs::path& path) {
  struct stat st {};
  struct tm utc {};
  char text[32];
  if (::lstat(path.c_str(), &st) != 0 || !::gmtime_r(&st.st_mtime, &utc)) return {};
  return std::string(text, std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc));
}

// The directories a claim made and the lock it holds; `created` is declared
// first so that it goes last, after the lock removed its file from inside it.
class DirectoryClaim final : public Claim {
 public:
  DirectoryClaim(publish::OutputDirectory held, std::size_t removed) : held_(std::move(held)), removed_(removed) {}
  void keep() override { held_.keep(); }
  std::size_t removed_temporaries() const override { return removed_; }

 private:
  publish::OutputDirectory held_;
  std::size_t removed_;
};

// A run's files published in their directory: written under temporaries
// beside their final names, renamed all at once at the commit, then the
// commit object written; or, for split --resume, each renamed as soon as it
// is complete, after its journal entry. The claim (the directory's
// lock, and the directories it made) is declared first, so that it goes last.
class DirectoryPublication final : public Publication {
 public:
  DirectoryPublication(WritableStore& place, std::string dir, const PublicationPlan& plan, Claims claims)
      : place_(place),
        claim_(std::move(claims.place.claim)),
        files_(std::move(dir), plan),
        names_(plan.names),
        mine_(plan.mine),
        last_(plan.last),
        alone_(plan.alone),
        journal_(plan.journal),
        // Renames wait for the commit: nothing is gained by rounds, unless each file is published as it is
        // complete and -j workers write them (their files are hashed once a round is written).
        handing_(plan.mine, journal_ && plan.workers > 1 ? plan.workers : 0, plan.names.size()) {
    if (journal_) files_.keep_published();
  }

  std::string path(std::uint64_t index) const override { return files_.temporary(index); }
  std::string local_name(std::uint64_t index) const override { return files_.final_path(index); }

  std::vector<FileRange> rounds() const override { return handing_.rounds(); }
  void make_room() override {}

  void complete(FileRange done) override {
    if (!journal_) return;  // renamed at the commit
    for (const std::uint64_t i : handing_.take(done)) {
      // The entry before its file: a kill between the two leaves an entry without its file, which a rerun
      // drops, never a file no entry vouches for. Not synced: an entry lost or torn in a crash is not
      // trusted, and one that outlived its file's bytes does not match them; either way the file is
      // written again.
      const std::string entry = (fs::path(files_.directory()) / specs::journal_name(names_[i])).string();
      publish::write_text_atomically(entry, journal_(i), publish::Sync::No);
      files_.publish(i);
    }
  }

  void stands(std::uint64_t index) override {
    handing_.stands(index);
    files_.stands(index);
  }

  void commit(const std::string& last_text) override {
    if (alone_) publish::check_directory_unchanged(files_.directory(), ours());
    files_.publish();
    store::commit(place_, last_, last_text);
    files_.keep();
    if (claim_) claim_->keep();
  }

  std::string abandon() override {
    files_.discard();
    return "";
  }

 private:
  // The run's names in the directory: its temporaries and, published as they
  // are complete, its files.
  std::vector<std::string> ours() const {
    std::vector<std::string> out = files_.temporaries();
    if (journal_)
      for (std::uint64_t i = mine_.begin; i < mine_.end; ++i) out.push_back(names_[i]);
    return out;
  }

  WritableStore& place_;
  std::unique_ptr<Claim> claim_;
  WrittenFiles files_;
  std::vector<std::string> names_;
  FileRange mine_;
  std::string last_;
  bool alone_;
  std::function<std::string(std::uint64_t)> journal_;
  Handing handing_;
};

// One file in its directory: checked and locked before any work (what
// killed runs onto it left is removed, since the lock tells that no live
// run writes it), written under a temporary, renamed into place. The lock
// is declared first, so that it goes last.
class DirectoryFile final : public FilePublication {
 public:
  DirectoryFile(const std::string& path, bool force)
      : replaces_(publish::prepare_output_file(path, force)),
        lock_(publish::lock_merge_output(path)),
        path_(path),
        temp_(outputs_.add(path, replaces_)) {}

  std::string path() const override { return temp_; }

  std::uint64_t publish(const std::function<void(std::uint64_t)>&) override {
    outputs_.publish();
    return fs::file_size(path_);
  }

  void keep() override { outputs_.keep(); }

 private:
  std::optional<run::FileIdentity> replaces_;  // the file it replaces (--force)
  publish::OutputLock lock_;
  std::string path_;
  publish::AtomicOutputs outputs_;
  std::string temp_;
};

class LocalDirectory final : public WritableStore {
 public:
  // "" is the current directory, whose members are named bare.
  explicit LocalDirectory(std::string dir) : bare_(dir.empty()), dir_(bare_ ? "." : std::move(dir)) {}

  std::string shown() const override { return dir_; }
  std::string shown(std::string_view name) const override { return path(name); }

  bool exists() const override {
    std::error_code ec;
    return fs::is_directory(dir_, ec);
  }

  std::vector<Entry> list() const override {
    std::vector<Entry> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      std::error_code stat_ec;
      const fs::file_status status = fs::symlink_status(entry.path(), stat_ec);
      if (stat_ec || !fs::exists(status)) continue;  // gone while listed
      const bool regular = fs::is_regular_file(status);
      const auto size = regular ? fs::file_size(entry.path(), stat_ec) : 0;
      out.push_back({entry.path().filename().string(), stat_ec ? 0 : size, regular, modified_text(entry.path())});
    }
    if (ec) throw Error(fmt::format("{}: cannot list the directory: {}", dir_, ec.message()), kind_of_errno(ec.value()));
    std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
    return out;
  }

  // What is there but cannot be looked at (a symbolic link loop, no
  // permission) is an error, not a missing member; what is not a regular
  // file is no member.
  std::optional<std::uint64_t> size(std::string_view name) const override {
    const std::string p = path(name);
    std::error_code ec;
    const fs::file_status status = fs::status(p, ec);
    if (status.type() == fs::file_type::not_found) return std::nullopt;
    if (ec) throw Error(fmt::format("{}: cannot read ({})", p, ec.message()), kind_of_errno(ec.value()));
    if (status.type() != fs::file_type::regular) return std::nullopt;
    const auto size = fs::file_size(p, ec);
    if (ec) return std::nullopt;  // gone meanwhile
    return size;
  }

  Source source(std::string_view name) const override { return Source::local(path(name)); }

  std::optional<std::string> read_text(std::string_view name) const override {
    const std::string p = path(name);
    std::ifstream in(p);
    if (!in) {
      if (errno == ENOENT) return std::nullopt;
      throw Error(fmt::format("{}: cannot read: {}", p, std::strerror(errno)), kind_of_errno(errno));
    }
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  void put_text(std::string_view name, const std::string& text) override {
    publish::write_text_atomically(path(name), text);
  }

  void remove(std::string_view name) override {
    const std::string p = path(name);
    if (::unlink(p.c_str()) != 0 && errno != ENOENT)
      throw Error(fmt::format("{}: cannot remove: {}", p, std::strerror(errno)), kind_of_errno(errno));
  }

  void set_aside(std::string_view name) override { discards_.discard(path(name)); }

  std::unique_ptr<Claim> claim(std::string_view lock_name) override {
    std::error_code ec;
    if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec))
      throw Error(dir_ + ": the output path exists and is not a directory");
    publish::CreatedDirectories created(dir_);
    if (!fs::is_directory(dir_, ec)) throw Error(dir_ + ": the output path exists and is not a directory");
    publish::OutputLock lock(path(lock_name), dir_);
    // The directory's own lock is held by every writer of a whole split and
    // by finish: holding it proves whatever temporaries are there dead.
    const std::size_t removed =
        lock_name == specs::kLockName ? publish::remove_split_leftovers(dir_) : 0;
    return std::make_unique<DirectoryClaim>(publish::OutputDirectory{std::move(created), std::move(lock)}, removed);
  }

  bool holds(const Source& source, std::string_view name) const override {
    std::error_code ec;
    return !source.is_remote() && fs::equivalent(source.name(), path(name), ec);
  }

  std::unique_ptr<Publication> publication(const PublicationPlan& plan, Claims claims) override {
    return std::make_unique<DirectoryPublication>(*this, dir_, plan, std::move(claims));
  }

  std::unique_ptr<FilePublication> file_publication(std::string_view name, bool force) override {
    return std::make_unique<DirectoryFile>(path(name), force);
  }

 private:
  std::string path(std::string_view name) const {
    return bare_ ? std::string(name) : (fs::path(dir_) / name).string();
  }

  bool bare_;
  std::string dir_;
  publish::Discards discards_;  // set_aside's; its process is waited for before the rest goes
};

}  // namespace

std::unique_ptr<WritableStore> local_directory(std::string dir) { return std::make_unique<LocalDirectory>(std::move(dir)); }

}  // namespace mb::io::store
