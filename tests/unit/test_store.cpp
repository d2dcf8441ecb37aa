// io/store in-process: the contract every Store keeps (a local directory
// here; an S3 prefix on a loopback server when tests/e2e/test_store_contract.py
// names one), and the guarantees written once above the interface, proved on
// an in-memory store that can fail the way a network does.
#include <doctest/doctest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "helpers.hpp"
#include "io/aws/chain.hpp"
#include "io/publish/discard.hpp"
#include "io/split/claim.hpp"
#include "io/store/local.hpp"
#include "io/store/place.hpp"
#include "io/store/store.hpp"
#include "specs/file_names.hpp"

namespace {
namespace fs = std::filesystem;
using mb::io::store::Entry;
using mb::io::store::Store;
using mb::io::store::WritableStore;
using mb::test::message_of;

// A store in memory. `lose_next_put`: the next put is kept but answered
// with a failure a retry may cure (an answer lost on the way back);
// `refuse_next_put`: the next put is refused (nothing kept).
class MemoryStore final : public WritableStore {
 public:
  std::map<std::string, std::string> members;
  std::vector<std::string> removed;  // in the order removed
  bool lose_next_put = false, refuse_next_put = false;

  std::string shown() const override { return "mem://"; }
  std::string shown(std::string_view name) const override { return "mem://" + std::string(name); }
  std::vector<Entry> list() const override {
    std::vector<Entry> out;
    for (const auto& [name, text] : members) out.push_back({name, text.size(), true, {}});
    return out;
  }
  std::optional<std::uint64_t> size(std::string_view name) const override {
    const auto it = members.find(std::string(name));
    if (it == members.end()) return std::nullopt;
    return it->second.size();
  }
  mb::Source source(std::string_view name) const override { return mb::Source::local(shown(name)); }
  std::optional<std::string> read_text(std::string_view name) const override {
    const auto it = members.find(std::string(name));
    if (it == members.end()) return std::nullopt;
    return it->second;
  }
  void put_text(std::string_view name, const std::string& text) override {
    if (std::exchange(refuse_next_put, false)) throw mb::Error(shown(name) + ": HTTP 403");
    members[std::string(name)] = text;
    if (std::exchange(lose_next_put, false)) throw mb::environment_error(shown(name) + ": HTTP 500");
  }
  void remove(std::string_view name) override {
    removed.emplace_back(name);
    members.erase(std::string(name));
  }
  std::unique_ptr<mb::io::store::Claim> claim(std::string_view) override { return nullptr; }
  bool holds(const mb::Source& source, std::string_view name) const override { return source.name() == shown(name); }
  std::unique_ptr<mb::io::store::Publication> publication(const mb::io::store::PublicationPlan&,
                                                          mb::io::store::Claims) override {
    throw std::logic_error("a memory store publishes nothing");
  }
  std::unique_ptr<mb::io::store::FilePublication> file_publication(std::string_view, bool) override {
    throw std::logic_error("a memory store publishes nothing");
  }
};

// A fresh directory under /tmp, removed with everything in it.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("mb-store-test-" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

void write(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// What every Store keeps: members written whole, listed in name order with
// their sizes, read back, removed (a missing one too), and told apart from
// what is not there.
void check_contract(WritableStore& store) {
  CHECK(store.size("a.json") == std::nullopt);
  CHECK(store.read_text("a.json") == std::nullopt);
  store.put_text("b.json", "bee\n");
  store.put_text("a.json", "{}");
  const std::vector<Entry> listed = store.list();
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].name == "a.json");
  CHECK(listed[0].size == 2);
  CHECK(listed[1].name == "b.json");
  CHECK(listed[1].size == 4);
  CHECK(store.size("b.json") == 4);
  CHECK(store.read_text("b.json") == "bee\n");
  CHECK(store.holds(store.source("a.json"), "a.json"));
  CHECK_FALSE(store.holds(store.source("a.json"), "b.json"));
  CHECK(store.shown("a.json").ends_with("a.json"));
  store.remove("a.json");
  store.remove("a.json");  // gone already: no error
  CHECK(store.size("a.json") == std::nullopt);
  store.remove("b.json");
  CHECK(store.list().empty());
}

// What every place does with one file published whole: nothing under the
// name before publish(), an existing member refused without --force and
// replaced with it, nothing left by a run that ends before publishing,
// nothing of the run's own (lock, temporaries, spool) left after.
void check_file_publication(WritableStore& store) {
  {
    const auto file = store.file_publication("merged.h5", false);
    write(file->path(), "one");
    CHECK(store.size("merged.h5") == std::nullopt);
    CHECK(file->publish({}) == 3);
    file->keep();
  }
  CHECK(store.read_text("merged.h5") == "one");
  CHECK(message_of([&] { (void)store.file_publication("merged.h5", false); }).find("use --force") !=
        std::string::npos);
  fs::path written;
  {
    const auto file = store.file_publication("merged.h5", true);
    written = file->path();
    write(written, "two!");
  }  // ends unpublished
  CHECK(store.read_text("merged.h5") == "one");
  CHECK_FALSE(fs::exists(written));
  {
    const auto file = store.file_publication("merged.h5", true);
    write(file->path(), "two!");
    CHECK(file->publish({}) == 4);
    file->keep();
  }
  CHECK(store.read_text("merged.h5") == "two!");
  const std::vector<Entry> left = store.list();
  REQUIRE(left.size() == 1);
  CHECK(left[0].name == "merged.h5");
  store.remove("merged.h5");
}

}  // namespace

TEST_CASE("store contract: a local directory") {
  TempDir dir;
  fs::create_directories(dir.path);
  const auto store = mb::io::store::local_directory(dir.path.string());
  check_contract(*store);
  check_file_publication(*store);
}

TEST_CASE("store: a member set aside is gone from its place at once, and its bytes before the store") {
  TempDir dir;
  fs::create_directories(dir.path);
  write(dir.path / "keep.txt", "kept");
  {
    const auto store = mb::io::store::local_directory(dir.path.string());
    for (const char* name : {"a.h5", "b.h5"}) write(dir.path / name, std::string(1 << 20, 'x'));
    store->set_aside("a.h5");
    store->set_aside("b.h5");
    store->set_aside("missing.h5");  // nothing there: no error
    CHECK(store->size("a.h5") == std::nullopt);  // aside (hidden) or gone already
    CHECK(store->size("b.h5") == std::nullopt);
  }
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path)) left.push_back(e.path().filename().string());
  CHECK(left == std::vector<std::string>{"keep.txt"});
}

TEST_CASE("store: a name set aside is told as this process's, not another's") {
  const std::string aside = fs::path(mb::io::publish::aside_name("/d/microbatch-00000.h5")).filename().string();
  CHECK(aside == ".microbatch-00000.h5.aside-" + std::to_string(::getpid()));
  CHECK(mb::specs::aside_of(aside, ::getpid()) == "microbatch-00000.h5");
  CHECK_FALSE(mb::specs::aside_of(".microbatch-00000.h5.aside-1", ::getpid()));
  CHECK_FALSE(mb::specs::aside_of("microbatch-00000.h5", ::getpid()));
}

TEST_CASE("store: --force replaces only the file the run found there") {
  TempDir dir;
  fs::create_directories(dir.path);
  write(dir.path / "merged.h5", "found");
  const auto store = mb::io::store::local_directory(dir.path.string());
  const auto file = store->file_publication("merged.h5", true);
  write(file->path(), "merged");
  fs::remove(dir.path / "merged.h5");
  write(dir.path / "merged.h5", "another run's");
  CHECK_FALSE(message_of([&] { (void)file->publish({}); }).empty());
  CHECK(store->read_text("merged.h5") == "another run's");
}

TEST_CASE("store: an HTTP(S) location is opened to read, and refused as a place to write") {
  const mb::Settings settings;
  const auto read = mb::io::store::open_store("https://example.invalid/split", settings);
  CHECK(read->shown() == "https://example.invalid/split/");
  CHECK(dynamic_cast<WritableStore*>(read.get()) == nullptr);  // it has no write methods at all
  for (const auto* where : {"https://example.invalid/split/", "http://example.invalid/m.h5"}) {
    mb::ErrorKind kind{};
    const std::string said = message_of([&] {
      try {
        (void)mb::io::store::open_writable_member(where, settings);
      } catch (const mb::Error& e) {
        kind = e.kind();
        throw;
      }
    });
    CHECK(said.find("an HTTP(S) location is read-only") != std::string::npos);
    CHECK(kind == mb::ErrorKind::Usage);
  }
  CHECK(dynamic_cast<WritableStore*>(mb::io::store::open_store("some/dir", settings).get()) != nullptr);
}

TEST_CASE("store: a bare output name is a member of the current directory, named bare") {
  TempDir dir;
  fs::create_directories(dir.path);
  const fs::path was = fs::current_path();
  fs::current_path(dir.path);
  const mb::io::store::WritableMember member = mb::io::store::open_writable_member("merged.h5", mb::Settings());
  CHECK(member.name == "merged.h5");
  CHECK(member.store->shown("merged.h5") == "merged.h5");
  CHECK(member.store->shown() == ".");
  const auto file = member.store->file_publication(member.name, false);
  CHECK(fs::path(file->path()).parent_path().empty());  // beside it, in the current directory
  fs::current_path(was);
}

namespace {

// The loopback server's settings, as tests/e2e/test_store_contract.py gives them.
mb::Settings s3_settings() {
  std::map<std::string, std::string> variables;
  for (const char* name : {"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "TMPDIR"})
    if (const char* value = std::getenv(name)) variables[name] = value;
  const mb::Settings settings(variables);
  return settings.with_aws(mb::io::aws::credential_chain(settings, {}));
}

}  // namespace

TEST_CASE("store contract: an S3 prefix, when a loopback server is named") {
  // tests/e2e/test_store_contract.py runs this case against s3rver; alone it has no store to talk to.
  const char* prefix = std::getenv("MB_TEST_S3_PREFIX");
  if (prefix == nullptr) return;
  const auto store = mb::io::store::open_writable(prefix, s3_settings());
  check_contract(*store);
  check_file_publication(*store);
  const std::string ran = std::string("the S3 contract ran against ") + prefix;
  MESSAGE(ran);
}

TEST_CASE("store: a local directory lists what is not a file as not regular, and refuses to replace a member") {
  TempDir dir;
  fs::create_directories(dir.path / "sub");
  write(dir.path / "x.json", "x");
  REQUIRE(::mkfifo((dir.path / "fifo").c_str(), 0600) == 0);
  const auto store = mb::io::store::local_directory(dir.path.string());
  std::map<std::string, bool> regular;
  for (const auto& e : store->list()) regular[e.name] = e.regular;
  CHECK(regular == std::map<std::string, bool>{{"fifo", false}, {"sub", false}, {"x.json", true}});
  CHECK(message_of([&] { store->put_text("x.json", "y"); }).find("appeared") != std::string::npos);
  CHECK(store->read_text("x.json") == "x");
  fs::create_hard_link(dir.path / "x.json", dir.path / "same.json");
  CHECK(store->holds(mb::Source::local((dir.path / "same.json").string()), "x.json"));
}

TEST_CASE("store: a directory's claim creates it, locks it, and removes it again unless kept") {
  TempDir dir;
  const fs::path out = dir.path / "a" / "b";
  const auto store = mb::io::store::local_directory(out.string());
  {
    const auto claim = store->claim(".microbatch.lock");
    CHECK(fs::is_directory(out));
    const auto second = mb::io::store::local_directory(out.string());
    try {
      (void)second->claim(".microbatch.lock");
      FAIL("a second claim of a held lock succeeded");
    } catch (const mb::Error& e) {
      CHECK(e.kind() == mb::ErrorKind::Environment);  // a retry may help: the other run ends
    }
  }
  CHECK_FALSE(fs::exists(dir.path / "a"));  // not kept: the directories it made are gone
  {
    const auto claim = store->claim(".microbatch.lock");
    claim->keep();
  }
  CHECK(fs::is_directory(out));
  CHECK_FALSE(fs::exists(out / ".microbatch.lock"));
}

TEST_CASE("place: a commit whose answer was lost is removed, a refused one leaves what stands") {
  MemoryStore store;
  store.lose_next_put = true;
  try {
    mb::io::store::commit(store, "manifest.json", "{}");
    FAIL("a lost commit succeeded");
  } catch (const mb::Error& e) {
    CHECK(e.kind() == mb::ErrorKind::Environment);
  }
  CHECK(store.members.empty());
  store.members["part.json"] = "theirs";
  store.refuse_next_put = true;
  CHECK(message_of([&] { mb::io::store::commit(store, "part.json", "ours"); }).find("403") != std::string::npos);
  CHECK(store.members.at("part.json") == "theirs");
  CHECK(store.removed.size() == 1);  // only the lost manifest
  mb::io::store::commit(store, "manifest.json", "{}");
  CHECK(store.members.at("manifest.json") == "{}");
}

TEST_CASE("place: an output that the run reads is refused") {
  MemoryStore store;
  const std::vector<mb::Source> read{store.source("microbatch-00000.h5"), store.source("manifest.json")};
  CHECK(message_of([&] { mb::io::store::refuse_reading(store, "manifest.json", read); }) ==
        "mem://manifest.json: the output would replace mem://manifest.json, which this run reads");
  mb::io::store::refuse_reading(store, "merged.h5", read);
}

TEST_CASE("claim: an earlier split is refused, or replaced with force manifest first") {
  MemoryStore store;
  for (const char* name : {"microbatch-00000.h5", "microbatch-00001.h5", "manifest.json",
                           "part-00000-of-00002.json", "notes.txt"})
    store.members[name] = "x";
  const mb::Source input = mb::Source::local("/data/in.h5");
  CHECK(message_of([&] { (void)mb::io::split::claim_split(store, false, input, false); }) ==
        "mem://: holds the output of an earlier split (manifest.json); use --force to replace it");
  CHECK(store.removed.empty());
  const auto kept = mb::io::split::claim_split(store, true, input, true);
  CHECK(store.removed == std::vector<std::string>{"manifest.json", "part-00000-of-00002.json"});
  CHECK(kept.earlier == std::vector<std::string>{"microbatch-00000.h5", "microbatch-00001.h5"});
  (void)mb::io::split::claim_split(store, true, input, false);
  CHECK(store.members == std::map<std::string, std::string>{{"notes.txt", "x"}});  // not a split output
}

TEST_CASE("claim: the input among the place's outputs is refused even with force") {
  MemoryStore store;
  store.members["microbatch-00000.h5"] = "x";
  store.members["manifest.json"] = "{}";
  const std::string message =
      message_of([&] { (void)mb::io::split::claim_split(store, true, store.source("microbatch-00000.h5"), false); });
  CHECK(message.find("the input mem://microbatch-00000.h5") != std::string::npos);
  CHECK(store.removed.empty());
}

namespace {

// Two files and the manifest of a whole split.
mb::io::store::PublicationPlan two_files() {
  mb::io::store::PublicationPlan plan;
  plan.names = {"microbatch-00000.h5", "microbatch-00001.h5"};
  plan.mine = {0, 2};
  plan.last = "manifest.json";
  return plan;
}

// `place` claimed by its lock, as a whole split's claim takes it.
mb::io::store::Claims locked(WritableStore& place) {
  mb::io::store::Claims claims;
  claims.place.claim = place.claim(".microbatch.lock");
  return claims;
}

// The names that appear in `dir` under a final name (not hidden), in the order they appear.
class Appearing {
 public:
  explicit Appearing(const fs::path& dir) : fd_(::inotify_init1(IN_NONBLOCK)) {
    REQUIRE(fd_ >= 0);
    REQUIRE(::inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_MOVED_TO) >= 0);
  }
  ~Appearing() { ::close(fd_); }
  std::vector<std::string> names() {
    std::vector<std::string> out;
    alignas(inotify_event) char buffer[1 << 14];
    for (ssize_t n; (n = ::read(fd_, buffer, sizeof buffer)) > 0;)
      for (char* p = buffer; p < buffer + n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(p);
        if (event->len > 0 && event->name[0] != '.') out.emplace_back(event->name);
        p += sizeof(inotify_event) + event->len;
      }
    return out;
  }

 private:
  int fd_;
};

}  // namespace

TEST_CASE("publication: a directory's files appear only at the commit, the manifest last") {
  TempDir dir;
  const auto store = mb::io::store::local_directory(dir.path.string());
  const auto publication = store->publication(two_files(), locked(*store));
  REQUIRE(fs::is_directory(dir.path));  // claimed: created
  Appearing appearing(dir.path);
  CHECK(publication->rounds() == std::vector<mb::FileRange>{{0, 2}});
  CHECK(publication->local_name(1) == (dir.path / "microbatch-00001.h5").string());
  for (std::uint64_t i = 0; i < 2; ++i) {
    publication->make_room();
    CHECK(fs::path(publication->path(i)).parent_path() == dir.path);
    write(publication->path(i), "file " + std::to_string(i));
  }
  publication->complete({0, 2});
  CHECK(mb::io::store::split_outputs(*store).empty());  // written, not yet published
  publication->commit("{}");
  CHECK(appearing.names() == std::vector<std::string>{"microbatch-00000.h5", "microbatch-00001.h5", "manifest.json"});
  CHECK(store->read_text("microbatch-00001.h5") == "file 1");
  CHECK(store->read_text("manifest.json") == "{}");
  CHECK(mb::io::store::split_outputs(*store).size() == 3);
}

TEST_CASE("publication: abandoned, a directory's temporaries go, and the directory it made") {
  TempDir dir;
  const fs::path out = dir.path / "out";
  fs::create_directories(dir.path);
  const auto store = mb::io::store::local_directory(out.string());
  {
    const auto publication = store->publication(two_files(), locked(*store));
    write(publication->path(0), "half");
    REQUIRE(fs::exists(publication->path(0)));
    CHECK(publication->abandon().empty());
    CHECK_FALSE(fs::exists(publication->path(0)));
  }
  CHECK_FALSE(fs::exists(out));  // not committed: the claim removed what it created
}

TEST_CASE("publication: a split output that appears meanwhile fails a whole split's commit, nothing published") {
  TempDir dir;
  const auto store = mb::io::store::local_directory(dir.path.string());
  const auto publication = store->publication(two_files(), locked(*store));
  for (std::uint64_t i = 0; i < 2; ++i) write(publication->path(i), "x");
  write(dir.path / "microbatch-00007.h5", "stray");
  CHECK(message_of([&] { publication->commit("{}"); }).find("appeared") != std::string::npos);
  publication->abandon();
  const auto left = mb::io::store::split_outputs(*store);
  REQUIRE(left.size() == 1);
  CHECK(left[0].name == "microbatch-00007.h5");
}

namespace {

// Writes every round of `publication`'s files ("file I"), each round handed on.
void write_rounds(mb::io::store::Publication& publication) {
  for (const mb::FileRange& round : publication.rounds()) {
    publication.make_room();
    for (std::uint64_t i = round.begin; i < round.end; ++i) write(publication.path(i), "file " + std::to_string(i));
    publication.complete(round);
  }
}

}  // namespace

TEST_CASE("publication: onto an S3 prefix, in rounds, the commit object last, when a loopback server is named") {
  // tests/e2e/test_store_contract.py runs this case against s3rver; alone it has no store to talk to.
  const char* prefix = std::getenv("MB_TEST_S3_PREFIX");
  if (prefix == nullptr) return;
  const auto store = mb::io::store::open_writable(prefix, s3_settings(), {.keep_local = {}, .uploads = 1});  // rounds of two files
  mb::io::store::PublicationPlan plan = two_files();
  plan.names.push_back("microbatch-00002.h5");
  plan.mine = {0, 3};
  fs::path spool;
  {
    const auto publication = store->publication(plan, locked(*store));
    CHECK(publication->rounds() == std::vector<mb::FileRange>{{0, 2}, {2, 3}});
    spool = fs::path(publication->path(0)).parent_path();
    write_rounds(*publication);
    CHECK(store->size("manifest.json") == std::nullopt);
    publication->commit("{}");
  }
  CHECK(mb::io::store::split_outputs(*store).size() == 4);
  CHECK(store->read_text("microbatch-00002.h5") == "file 2");
  CHECK(store->read_text("manifest.json") == "{}");
  CHECK_FALSE(fs::exists(spool));  // emptied as the files went up, and removed
  plan.names = {"microbatch-00009.h5"};
  plan.mine = {0, 1};
  {
    const auto publication = store->publication(plan, locked(*store));
    write_rounds(*publication);
    CHECK(publication->abandon().empty());  // what it uploaded is deleted
  }
  CHECK(store->size("microbatch-00009.h5") == std::nullopt);
  for (const auto& entry : store->list()) store->remove(entry.name);
  const std::string ran = std::string("the S3 publication ran against ") + prefix;
  MESSAGE(ran);
}
