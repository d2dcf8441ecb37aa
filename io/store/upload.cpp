#include "io/store/upload.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "core/units.hpp"
#include "io/publish/outputs.hpp"
#include "io/publish/uploader.hpp"
#include "io/remote/curl.hpp"
#include "io/remote/settings.hpp"
#include "io/remote/upload.hpp"
#include "io/store/local.hpp"
#include "io/store/place.hpp"
#include "io/store/written.hpp"
#include "specs/file_names.hpp"
#include "specs/journal.hpp"

namespace mb::io::store {
namespace {

// A new directory's name under $TMPDIR (default /tmp), for files on their
// way up; removed when the run ends.
std::string spool_name(const Environment& env) {
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  return fmt::format("{}/microbatch-upload-{}-{:x}", temporary_directory(env), ::getpid(), stamp & 0xffffff);
}

// The directory the files are written in: --keep-local's, else a spool.
std::string spool_directory(const PrefixTarget& prefix) {
  return prefix.options.keep_local ? *prefix.options.keep_local : spool_name(prefix.settings.environment());
}

// The object each file goes to (from its local copy, "" for those of other
// shards), the commit object's, and the earlier split's objects that this
// one does not overwrite.
publish::UploadPlan upload_plan(const PrefixTarget& prefix, const PublicationPlan& plan, const WrittenFiles& files,
                                const std::vector<std::string>& earlier) {
  const auto address_of = [&](const std::string& name) { return resolve_remote(prefix.base + name, prefix.settings); };
  const bool keep_local = prefix.options.keep_local.has_value();
  publish::UploadPlan out;
  for (std::uint64_t i = 0; i < plan.names.size(); ++i)
    out.files.push_back({files.temporary(i), address_of(plan.names[i]), !keep_local,
                         address_of(specs::journal_name(plan.names[i]))});
  out.keep_confirmed = static_cast<bool>(plan.journal);
  // Run in the uploading process, a copy of this one made by fork: the Store and the watch on inputs are there.
  out.commit = [&store = prefix.store, last = plan.last](const std::string& text) { store::commit(store, last, text); };
  for (const auto& old : earlier)
    if (std::find(plan.names.begin(), plan.names.end(), old) == plan.names.end())
      out.stale.push_back(address_of(old));
  out.settings = remote::settings_from(prefix.settings.environment());
  out.concurrency = prefix.options.uploads;
  if (!keep_local) out.spool = files.directory();
  out.confirmed = plan.uploaded;
  return out;
}

// Files are written a round at a time and uploaded while the next round is
// written; the spool holds at most two rounds. The spool's claim is
// declared before the files and the uploads, so that it goes last.
class PrefixPublication final : public Publication {
 public:
  PrefixPublication(const PrefixTarget& prefix, const PublicationPlan& plan, Claims claims)
      : shown_(prefix.store.shown()),
        claim_(std::move(claims.place.claim)),
        earlier_(std::move(claims.place.earlier)),
        spool_dir_(spool_directory(prefix)),
        spool_(claims.copy ? std::move(claims.copy) : local_directory(spool_dir_)),
        spool_claim_(claims.copy_claimed.claim ? std::move(claims.copy_claimed.claim)
                                               : spool_->claim(specs::kLockName)),
        files_(spool_dir_, plan),
        mine_(plan.mine),
        last_(plan.last),
        keep_local_(prefix.options.keep_local.has_value()),
        journal_(plan.journal),
        round_(std::max<std::uint64_t>({plan.workers, 2ull * prefix.options.uploads, 1})),
        handing_(plan.mine, round_, plan.names.size()) {
    if (plan.uploaded) plan.uploaded(0);
    uploads_.emplace(upload_plan(prefix, plan, files_, earlier_));
  }

  std::string path(std::uint64_t index) const override { return files_.temporary(index); }
  std::string local_name(std::uint64_t index) const override { return files_.final_path(index); }

  std::vector<FileRange> rounds() const override { return handing_.rounds(); }

  void make_room() override { uploads_->wait_for(round_); }

  void complete(FileRange done) override {
    for (const std::uint64_t i : handing_.take(done)) uploads_->upload(i, journal_ ? journal_(i) : "");
    spdlog::debug("split: {} of {} files written, {} uploaded ({})", done.end - mine_.begin, mine_.size(),
                  uploads_->confirmed(), byte_text(static_cast<double>(uploads_->uploaded_bytes())));
  }

  void stands(std::uint64_t index) override {
    handing_.stands(index);
    files_.stands(index);
  }

  void commit(const std::string& last_text) override;

  std::string abandon() override {
    std::string left = uploads_ ? uploads_->abandon() : "";
    files_.discard();
    return left;
  }

 private:
  std::string shown_;
  std::unique_ptr<Claim> claim_;      // the prefix's (it has no lock: nothing)
  std::vector<std::string> earlier_;  // an earlier split's files, left until the commit (--force)
  std::string spool_dir_;
  std::unique_ptr<WritableStore> spool_;
  std::unique_ptr<Claim> spool_claim_;
  WrittenFiles files_;
  FileRange mine_;
  std::string last_;
  bool keep_local_;
  std::function<std::string(std::uint64_t)> journal_;
  std::uint64_t round_;
  Handing handing_;
  std::optional<publish::Uploader> uploads_;
};

// The commit object goes up once every file is confirmed; with
// --keep-local the files and the commit object stay in that directory too.
void PrefixPublication::commit(const std::string& last_text) {
  uploads_->commit(last_text);
  const std::uint64_t bytes = uploads_->uploaded_bytes();
  uploads_.reset();  // its process ends with its last report
  spdlog::debug("split: {} files uploaded to {} ({})", mine_.size(), shown_, byte_text(static_cast<double>(bytes)));
  if (claim_) claim_->keep();
  if (!keep_local_) return;
  files_.publish();
  publish::write_text_atomically((std::filesystem::path(spool_dir_) / last_).string(), last_text);
  files_.keep();
  spool_claim_->keep();
}

// The ETag of the object at the address as the store has it now (never a
// cached answer), none when there is none: one byte asked for, so that a
// missing bucket is told from a missing key.
std::optional<std::string> etag_at(remote::Client& client, const RemoteAddress& address) {
  const remote::Answer a = client.send(address, {.method = "GET", .headers = {"Range: bytes=0-0"}, .absent_ok = true});
  if (a.status != 404) return a.etag;
  if (const std::string code = remote::xml_element(a.body, "Code"); !code.empty() && code != "NoSuchKey")
    throw Error(fmt::format("{}: HTTP 404 ({}: {})", shown_name(address.name), code,
                            remote::xml_element(a.body, "Message")));
  return std::nullopt;
}

// The object checked before any work (the store, the bucket and the
// credentials tried on the way), then written to a spool of its own and
// uploaded whole. The spool's directory is declared first, so that it goes
// last, once the file in it is gone.
class PrefixFile final : public FilePublication {
 public:
  PrefixFile(const RemoteAddress& address, bool force)
      : address_(address),
        earlier_(standing(address, force)),
        spool_dir_(spool_name(address.env)),
        spool_(spool_dir_),
        file_(spool_dir_ + "/" + address.name.substr(address.name.rfind('/') + 1)) {}

  std::string path() const override { return file_.path(); }

  std::uint64_t publish(const std::function<void(std::uint64_t)>& uploaded) override {
    remote::Client client(remote::settings_from(address_.env));
    std::uint64_t sent = 0;
    remote::Uploaded up;
    try {
      up = remote::put_file(client, address_, file_.path(), [&](std::uint64_t n) {
        sent += n;
        if (uploaded) uploaded(sent);
      });
    } catch (const Error& e) {
      // The object is the commit: one that may have landed goes, so that a failed merge leaves none; the
      // object --force was to replace stays when it is still the one there.
      store::undo_lost(e, [&] {
        if (const auto now = etag_at(client, address_); now && now != earlier_) remote::delete_object(client, address_);
      });
    }
    spdlog::debug("{}: {} uploaded", shown_name(address_.name), byte_text(static_cast<double>(up.size)));
    return up.size;
  }

  void keep() override {}

 private:
  // The ETag of the object at the key before any work (none: nothing
  // there); without --force, an object there is refused. A failed upload
  // removes what is there then only if it is another object: this run's.
  static std::optional<std::string> standing(const RemoteAddress& address, bool force) {
    remote::Client client(remote::settings_from(address.env));
    std::optional<std::string> etag = etag_at(client, address);
    if (etag && !force)
      throw Error(fmt::format("{}: the output exists; use --force to replace it", shown_name(address.name)));
    return etag;
  }

  RemoteAddress address_;
  std::optional<std::string> earlier_;
  std::string spool_dir_;
  publish::CreatedDirectories spool_;
  publish::ScratchFile file_;
};

}  // namespace

std::unique_ptr<FilePublication> prefix_file(const RemoteAddress& address, bool force) {
  return std::make_unique<PrefixFile>(address, force);
}

std::unique_ptr<Publication> prefix_publication(const PrefixTarget& prefix, const PublicationPlan& plan,
                                                Claims claims) {
  return std::make_unique<PrefixPublication>(prefix, plan, std::move(claims));
}

}  // namespace mb::io::store
