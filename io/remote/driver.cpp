#include "io/remote/driver.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "io/h5/file.hpp"
#include "io/run/guard.hpp"
#include "io/remote/http.hpp"

namespace mb::io::remote {
namespace {

// Small reads are served from blocks of this size, fetched whole: the
// library reads a file's metadata a few bytes at a time, scattered over
// the file. Reads of a block or more bypass the cache.
constexpr std::uint64_t kBlock = 1u << 20;
// All open remote files share this many bytes of blocks (merge opens many).
constexpr std::uint64_t kCacheBytes = 64u << 20;

// Blocks of remote files, least recently used dropped first. Locked:
// merge's digest threads fill it while they read whole files.
class BlockCache {
 public:
  using Key = std::pair<std::uint64_t, std::uint64_t>;  // (file serial, block index)

  bool has(const Key& key) {
    const std::lock_guard<std::mutex> hold(mutex_);
    return touch(key) != nullptr;
  }

  // Copies bytes [from, from + n) of a cached block to `out`; false when it is not cached.
  bool copy(const Key& key, std::uint64_t from, std::uint64_t n, char* out) {
    const std::lock_guard<std::mutex> hold(mutex_);
    const std::vector<char>* block = touch(key);
    if (!block || from + n > block->size()) return false;
    std::memcpy(out, block->data() + from, n);
    return true;
  }

  void put(const Key& key, std::vector<char> bytes) {
    const std::lock_guard<std::mutex> hold(mutex_);
    if (touch(key)) return;
    bytes_ += bytes.size();
    order_.push_front({key, std::move(bytes)});
    index_[key] = order_.begin();
    while (bytes_ > kCacheBytes && order_.size() > 2) evict(std::prev(order_.end()));
  }

 private:
  struct Entry {
    Key key;
    std::vector<char> bytes;
  };
  const std::vector<char>* touch(const Key& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->bytes;
  }
  void evict(std::list<Entry>::iterator entry) {
    bytes_ -= entry->bytes.size();
    index_.erase(entry->key);
    order_.erase(entry);
  }
  std::mutex mutex_;
  std::list<Entry> order_;
  std::map<Key, std::list<Entry>::iterator> index_;
  std::uint64_t bytes_ = 0;
};

BlockCache& cache() {
  static BlockCache c;
  return c;
}

// Puts `bytes`, which start at block `first`, into the cache block by block.
void put_blocks(std::uint64_t serial, std::uint64_t first, const char* bytes, std::uint64_t n) {
  for (std::uint64_t at = 0; at < n; at += kBlock)
    cache().put({serial, first + at / kBlock}, std::vector<char>(bytes + at, bytes + std::min(n, at + kBlock)));
}

// What the first open of a URL found, so that opening it again (split
// opens its input to plan, then to copy; --shard describes it first; merge
// digests its inputs, then reads them) costs no request: the blocks stay
// cached, and every answer must show the version the first one did (see
// Version), so a reopen cannot mix a replaced object with the cached one.
struct Known {
  Served served;
  std::uint64_t serial = 0;
};

class KnownObjects {
 public:
  std::optional<Known> find(const std::string& name) {
    const std::lock_guard<std::mutex> hold(mutex_);
    const auto it = known_.find(name);
    return it == known_.end() ? std::nullopt : std::optional<Known>(it->second);
  }
  void add(const std::string& name, const Known& k) {
    const std::lock_guard<std::mutex> hold(mutex_);
    known_.emplace(name, k);
  }
  std::uint64_t next_serial() {
    const std::lock_guard<std::mutex> hold(mutex_);
    return ++serials_;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, Known> known_;
  std::uint64_t serials_ = 0;
};

KnownObjects& known() {
  static KnownObjects k;
  return k;
}

struct Opened {
  std::unique_ptr<Object> object;
  std::uint64_t serial = 0;
};

// An Object for `address`, its first block in the cache.
Opened open_object(const RemoteAddress& address) {
  const std::string& name = address.name;
  const Settings settings = settings_from(address.env);
  if (const auto k = known().find(name)) return {std::make_unique<Object>(address, settings, k->served), k->serial};
  auto object = std::make_unique<Object>(address, settings, kBlock);
  const std::uint64_t serial = known().next_serial();
  put_blocks(serial, 0, object->head().data(), object->head().size());
  object->release_head();
  known().add(name, {object->served(), serial});
  return {std::move(object), serial};
}

// The driver's file: HDF5's public part first, as the library requires.
struct RemoteFile {
  H5FD_t pub{};
  std::string name;
  std::unique_ptr<Object> object;
  std::uint64_t serial = 0;
  haddr_t eoa = 0;
};

RemoteFile* as_remote(H5FD_t* f) { return reinterpret_cast<RemoteFile*>(f); }
const RemoteFile* as_remote(const H5FD_t* f) { return reinterpret_cast<const RemoteFile*>(f); }

// Copies [at, at + n) of the file out of cached blocks, fetching the
// missing ones, each run of adjacent missing blocks in one request.
void read_blocks(RemoteFile& f, std::uint64_t at, std::uint64_t n, char* out) {
  const std::uint64_t size = f.object->size(), first = at / kBlock, last = (at + n - 1) / kBlock;
  for (std::uint64_t b = first; b <= last;) {
    if (cache().has({f.serial, b})) {
      ++b;
      continue;
    }
    std::uint64_t end = b + 1;
    while (end <= last && !cache().has({f.serial, end})) ++end;
    const std::uint64_t from = b * kBlock, to = std::min(end * kBlock, size);
    std::vector<char> run(to - from);
    f.object->read(from, run.size(), run.data());
    put_blocks(f.serial, b, run.data(), run.size());
    b = end;
  }
  for (std::uint64_t b = first; b <= last; ++b) {
    const std::uint64_t lo = std::max(at, b * kBlock), hi = std::min(at + n, (b + 1) * kBlock);
    if (!cache().copy({f.serial, b}, lo - b * kBlock, hi - lo, out + (lo - at)))
      throw Error(f.object->shown() + ": internal: a block left the cache while it was read");
  }
}

// Callbacks: every exception stops here, recorded for h5::fail().
template <typename Fn>
herr_t guarded(Fn&& fn) {
  try {
    fn();
    return 0;
  } catch (const Error& e) {
    h5::note_driver_error(e);
  } catch (const std::exception& e) {
    h5::note_driver_error(Error(e.what()));
  }
  return -1;
}

// The address file_access() gave the access properties `fapl`.
const RemoteAddress& address_of(hid_t fapl) {
  const void* info = h5::driver_info(fapl);
  if (!info) throw Error("internal: remote file access properties without an address");
  return **static_cast<const RemoteAddress* const*>(info);
}

H5FD_t* open_file(const char* name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
  std::unique_ptr<RemoteFile> f(new RemoteFile);
  const herr_t rc = guarded([&] {
    if (flags & (H5F_ACC_RDWR | H5F_ACC_TRUNC | H5F_ACC_CREAT))
      throw usage_error(fmt::format("{}: remote files are read-only", shown_name(name)));
    const RemoteAddress& address = address_of(fapl);
    if (address.name != name) throw Error("internal: a remote file opened by another name than its address's");
    f->name = name;
    Opened opened = open_object(address);
    f->object = std::move(opened.object);
    f->serial = opened.serial;
    f->pub.maxaddr = maxaddr;
  });
  return rc < 0 ? nullptr : &f.release()->pub;
}

herr_t close_file(H5FD_t* file) {
  std::unique_ptr<RemoteFile> f(as_remote(file));  // its blocks stay cached for a reopen
  return 0;
}

int compare(const H5FD_t* a, const H5FD_t* b) { return std::strcmp(as_remote(a)->name.c_str(), as_remote(b)->name.c_str()); }

herr_t query(const H5FD_t*, unsigned long* flags) {
  *flags = 0;  // the block cache does what sieving and metadata accumulation would
  return 0;
}

haddr_t get_eoa(const H5FD_t* file, H5FD_mem_t) { return as_remote(file)->eoa; }

herr_t set_eoa(H5FD_t* file, H5FD_mem_t, haddr_t addr) {
  as_remote(file)->eoa = addr;
  return 0;
}

haddr_t get_eof(const H5FD_t* file, H5FD_mem_t) { return as_remote(file)->object->size(); }

// As the POSIX driver does, bytes past the end of the file read as zeros.
herr_t read(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, void* buffer) {
  return guarded([&] {
    RemoteFile& f = *as_remote(file);
    char* out = static_cast<char*>(buffer);
    const std::uint64_t end = f.object->size();
    const std::uint64_t n = addr >= end ? 0 : std::min<std::uint64_t>(size, end - addr);
    std::memset(out + n, 0, size - n);
    if (n == 0) return;
    if (n >= kBlock)
      f.object->read(addr, n, out);
    else
      read_blocks(f, addr, n, out);
  });
}

herr_t write(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t, size_t, const void*) {
  return guarded([&] { throw Error(shown_name(as_remote(file)->name) + ": remote files are read-only"); });
}

const H5FD_class_t kDriver = {
    "microbatch-remote",                             // name
    (haddr_t(1) << 62),                              // maxaddr
    H5F_CLOSE_WEAK,                                  // fc_degree
    nullptr,                                         // terminate
    nullptr, nullptr, nullptr,                       // superblock: nothing of ours in it
    sizeof(const RemoteAddress*), nullptr, nullptr, nullptr,  // fapl: a pointer to the address, copied as it is
    0, nullptr, nullptr,                             // dxpl
    open_file, close_file, compare, query,
    nullptr,                                         // get_type_map
    nullptr, nullptr,                                // alloc, free: read-only
    get_eoa, set_eoa, get_eof,
    nullptr,                                         // get_handle: no descriptor to give
    read, write,
    nullptr, nullptr, nullptr, nullptr,              // flush, truncate, lock, unlock
    H5FD_FLMAP_DICHOTOMY,
};

constexpr const char* kShown = "the remote file driver";

hid_t driver_id() {
  static const hid_t id = h5::register_driver(kDriver, kShown);
  return id;
}

}  // namespace

Version describe(const RemoteAddress& address) {
  return open_object(address).object->version();
}

// Windows of this size: few requests for a whole file.
constexpr std::uint64_t kWindow = 16u << 20;

std::uint64_t read_all(const RemoteAddress& address, const std::function<void(const char*, std::size_t)>& consume) {
  const Opened opened = open_object(address);
  Object& object = *opened.object;
  // A file that fits the cache well is kept there: merge, which digests its
  // inputs before it reads them, then reads it without a request.
  const bool keep = object.size() <= kCacheBytes / 4;
  std::vector<char> window(std::min(kWindow, object.size()));
  for (std::uint64_t at = 0; at < object.size(); at += kWindow) {
    run::throw_if_interrupted();
    const std::uint64_t n = std::min(kWindow, object.size() - at);
    std::uint64_t cached = 0;  // the head, and blocks an earlier reader left
    while (cached < n && cache().copy({opened.serial, (at + cached) / kBlock}, 0, std::min(kBlock, n - cached),
                                      window.data() + cached))
      cached += std::min(kBlock, n - cached);
    object.read(at + cached, n - cached, window.data() + cached);
    if (keep) put_blocks(opened.serial, (at + cached) / kBlock, window.data() + cached, n - cached);
    consume(window.data(), n);
  }
  return object.size();
}

h5::Id file_access(const RemoteAddress& address) {
  settings_from(address.env);  // a usage error before any request
  const RemoteAddress* info = &address;
  return h5::access_through(driver_id(), &info, kShown, {shown_name(address.name), ""});
}

}  // namespace mb::io::remote
