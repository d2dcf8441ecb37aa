#include "io/store/remote.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/remote/driver.hpp"
#include "io/remote/http.hpp"
#include "io/remote/listing.hpp"
#include "io/remote/upload.hpp"
#include "io/store/upload.hpp"

namespace mb::io::store {
namespace {

// A manifest or part record is small; anything larger is not one.
constexpr std::uint64_t kTextLimit = 64u << 20;

class NoClaim final : public Claim {
 public:
  void keep() override {}
};

// What every place named by URL shares: members are base + name. `Kind`
// is Store (read-only) or WritableStore.
template <typename Kind>
class UrlStore : public Kind {
 public:
  UrlStore(std::string base, const Settings& settings) : base_(std::move(base)), settings_(settings) {}

  std::string shown() const override { return shown_name(base_); }
  std::string shown(std::string_view name) const override { return shown_name(url(name)); }
  Source source(std::string_view name) const override { return Source::resolve(url(name), settings_); }

  bool holds(const Source& source, std::string_view name) const override {
    return source.is_remote() && source.address().url == address(name).url;
  }

 protected:
  std::string url(std::string_view name) const { return base_ + std::string(name); }
  RemoteAddress address(std::string_view name) const { return resolve_remote(url(name), settings_); }
  remote::Settings requests() const { return remote::settings_from(settings_.environment()); }

  std::string base_;
  Settings settings_;
};

class S3Prefix final : public UrlStore<WritableStore> {
 public:
  S3Prefix(std::string prefix, const Settings& settings, WriteOptions options)
      : UrlStore<WritableStore>(std::move(prefix), settings), options_(std::move(options)) {
    resolve_listing(base_, settings_);  // a malformed prefix, or no credentials: before any request
  }

  std::vector<Entry> list() const override {
    remote::Client client(requests());
    std::vector<Entry> out;
    for (const auto& o : remote::list_prefix(client, resolve_listing(base_, settings_)))
      out.push_back({o.name, o.size, true, o.modified});
    std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
    return out;
  }

  std::optional<std::uint64_t> size(std::string_view name) const override {
    remote::Client client(requests());
    const remote::Answer a = client.send(address(name), {.method = "HEAD", .absent_ok = true});
    if (a.status == 404) return std::nullopt;
    return a.length;
  }

  std::optional<std::string> read_text(std::string_view name) const override {
    remote::Client client(requests());
    return remote::get_text(client, address(name));
  }

  void put_text(std::string_view name, const std::string& text) override {
    remote::Client client(requests());
    remote::put_text(client, address(name), text, true);  // commit objects: of two runs, one commits
  }

  void remove(std::string_view name) override {
    remote::Client client(requests());
    remote::delete_object(client, address(name));
  }

  std::unique_ptr<Claim> claim(std::string_view) override { return std::make_unique<NoClaim>(); }

  bool overwrites() const override { return true; }
  std::optional<std::string> local_copy() const override { return options_.keep_local; }

  std::unique_ptr<Publication> publication(const PublicationPlan& plan, Claims claims) override {
    return prefix_publication({*this, base_, settings_, options_}, plan, std::move(claims));
  }

  std::unique_ptr<FilePublication> file_publication(std::string_view name, bool force) override {
    if (name.empty()) throw usage_error(fmt::format("-o/--output: {} names a prefix, not an object", shown()));
    return prefix_file(address(name), force);
  }

 private:
  WriteOptions options_;
};

class HttpLocation final : public UrlStore<Store> {
 public:
  using UrlStore<Store>::UrlStore;

  std::vector<Entry> list() const override {
    throw Error(fmt::format("{}: an HTTP(S) URL cannot be listed", shown()));
  }

  std::optional<std::uint64_t> size(std::string_view name) const override {
    try {
      return remote::describe(address(name)).size;
    } catch (const remote::Missing&) {
      return std::nullopt;
    }
  }

  std::optional<std::string> read_text(std::string_view name) const override {
    try {
      return remote::fetch_text(address(name), requests(), kTextLimit);
    } catch (const remote::Missing&) {
      return std::nullopt;
    }
  }
};

}  // namespace

std::unique_ptr<WritableStore> s3_prefix(std::string prefix, const Settings& settings,
                                         const WriteOptions& options) {
  return std::make_unique<S3Prefix>(std::move(prefix), settings, options);
}

std::unique_ptr<Store> http_location(std::string base, const Settings& settings) {
  return std::make_unique<HttpLocation>(std::move(base), settings);
}

}  // namespace mb::io::store
