#include "io/transfer/strings.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "core/global_heap.hpp"
#include "core/partition.hpp"
#include "io/run/guard.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/transfer/string_storage.hpp"

namespace mb::io::transfer {
namespace {

// Bytes per element in a block: its stored record and its char*.
constexpr std::uint64_t kPerElement = 16 + sizeof(char*);
// Elements per block at most: blocks are read on a thread of their own
// while the block before is written, so several make a copy.
constexpr std::uint64_t kBlockElements = 1u << 15;

// An error or the end of the file: false (libhdf5 then reads it, and reports it).
bool pread_all(int fd, unsigned char* out, std::size_t n, std::uint64_t at) {
  return h5::read_at(fd, out, n, at) == static_cast<std::int64_t>(n);
}

// Collections held for reuse at most: strings are mostly stored in the
// order of their elements, so few collections are ever looked up again.
constexpr std::uint64_t kHeldCollections = 4u << 20;

// Collections read and parsed (each at most `budget` bytes), kept for
// reuse up to kHeldCollections.
class Heaps {
 public:
  Heaps(const Records& source, std::uint64_t budget) : source_(source), budget_(budget) {}

  struct Collection {
    std::unique_ptr<unsigned char[]> bytes;
    std::size_t size = 0;
    std::vector<heap::Object> objects;
  };

  // The collection at `address`; null if it cannot be read or parsed exactly.
  const Collection* at(std::uint64_t address) {
    if (const auto it = cache_.find(address); it != cache_.end()) return &it->second;
    std::vector<unsigned char> header(heap::header_bytes(source_.sizes));
    if (!pread_all(source_.fd, header.data(), header.size(), address)) return nullptr;
    const auto size = heap::collection_size(header, source_.sizes);
    if (!size || *size > budget_) return nullptr;
    if (held_ + *size > kHeldCollections) {
      cache_.clear();
      held_ = 0;
    }
    Collection c;
    c.bytes.reset(new unsigned char[*size]);  // not zeroed: every byte is read into
    c.size = *size;
    if (!pread_all(source_.fd, c.bytes.get(), c.size, address)) return nullptr;
    auto objects = heap::parse_collection({c.bytes.get(), c.size}, source_.sizes);
    if (!objects) return nullptr;
    c.objects = std::move(*objects);
    held_ += *size;
    return &cache_.emplace(address, std::move(c)).first->second;
  }

 private:
  const Records& source_;
  std::uint64_t budget_;
  std::uint64_t held_ = 0;
  std::unordered_map<std::uint64_t, Collection> cache_;
};

// One block's strings: the char* array libhdf5 would have read, pointing
// into one arena.
struct Strings {
  std::vector<heap::Ref> refs;
  std::unique_ptr<char[]> arena;
  std::vector<const char*> pointers;
};

// Reads the element records of a block (one run of `count` elements).
bool read_refs(const Records& source, std::uint64_t first, std::uint64_t count, Strings& out) {
  const std::size_t element = source.sizes.element();
  const std::unique_ptr<unsigned char[]> records(new unsigned char[count * element]);
  if (!pread_all(source.fd, records.get(), count * element, source.offset + first * element)) return false;
  out.refs.resize(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto ref = heap::decode_ref(records.get() + i * element, source.sizes);
    if (!ref) return false;
    out.refs[i] = *ref;
  }
  return true;
}

std::uint64_t string_bytes(const Strings& s, std::uint64_t begin, std::uint64_t end) {
  std::uint64_t bytes = 0;
  for (std::uint64_t i = begin; i < end; ++i) bytes += s.refs[i].length + 1;
  return bytes;
}

// The strings of refs [begin, end) into the arena, and their pointers
// (only checked, if not `copy`); false if any is not exactly where its
// record says (length = object size).
bool gather(Heaps& heaps, Strings& s, std::uint64_t begin, std::uint64_t end, bool copy = true) {
  if (copy) {
    s.arena.reset(new char[string_bytes(s, begin, end)]);
    s.pointers.assign(end - begin, nullptr);  // null: libhdf5's null string
  }
  char* next = s.arena.get();
  std::uint64_t last_address = 0;  // neighbouring strings share a collection: one lookup
  const Heaps::Collection* c = nullptr;
  for (std::uint64_t i = begin; i < end; ++i) {
    const heap::Ref& ref = s.refs[i];
    if (ref.address == 0) continue;  // a null string (never written, or written null)
    if (c == nullptr || ref.address != last_address) {
      c = heaps.at(ref.address);
      last_address = ref.address;
    }
    if (c == nullptr || ref.index >= c->objects.size()) return false;
    const heap::Object& object = c->objects[ref.index];
    if (!object.present || object.size != ref.length) return false;
    if (!copy) continue;
    s.pointers[i - begin] = next;
    std::memcpy(next, c->bytes.get() + object.offset, object.size);
    next += object.size;
    *next++ = '\0';
  }
  return true;
}

// What the reader thread makes of one block: its strings, ready to write;
// or its records only, the strings being more than a block's share of the
// budget (written piece by piece); or nothing it trusts (libhdf5 reads it).
struct Prepared {
  enum class Kind { Ready, Large, Unreadable } kind = Kind::Unreadable;
  Strings strings;
};

// pread and parsing only, no libhdf5: this runs beside the thread that
// calls libhdf5 (which must be called from one thread only).
Prepared prepare(const Records& source, Heaps& heaps, const Selection& from, std::uint64_t budget) {
  Prepared p;
  const auto first = run_start(from, source.dims);
  if (!first || !read_refs(source, *first, from.elements(), p.strings)) return p;
  if (string_bytes(p.strings, 0, p.strings.refs.size()) > budget) {
    p.kind = Prepared::Kind::Large;
  } else if (gather(heaps, p.strings, 0, p.strings.refs.size())) {
    p.kind = Prepared::Kind::Ready;
  }
  return p;
}

// The strings of one run of a target's elements: collections written at
// the end of its file, then the records pointing at them. False, having
// written nothing, if `to` is not one run of its elements, or if most of
// the collections would be free space: a few short strings, which libhdf5
// puts in collections it shares.
bool write_packed(const Target& t, const Selection& to, const char* const* strings, const h5::Location& where) {
  const auto first = run_start(to, t.records.dims);
  if (!first) return false;
  const std::size_t n = to.elements(), element = t.records.sizes.element();
  const heap::Packed packed = heap::pack({strings, n}, t.records.sizes);
  if (packed.free * 2 > packed.bytes.size()) return false;
  const std::uint64_t base = packed.bytes.empty() ? 0 : reserve(t, packed.bytes.size(), where);
  h5::write_bytes(t.records.fd, packed.bytes.data(), packed.bytes.size(), base, where);
  const std::unique_ptr<unsigned char[]> records(new unsigned char[n * element]);
  heap::encode_refs(packed.refs, base, t.records.sizes, records.get());
  h5::write_bytes(t.records.fd, records.get(), n * element, t.records.offset + *first * element, where);
  return true;
}

struct StringCopy {
  hid_t src;
  const h5::Location& src_where;
  hid_t dst;
  const h5::Location& dst_where;
  hid_t type;  // memory type: the dataset's variable-length string type
  std::uint64_t budget;  // string bytes per write
  const Target* target;  // null: written through libhdf5
};

// How many strings went which way, for the debug log.
struct Counts {
  std::uint64_t read_slow = 0, written_packed = 0;
};

// Writes strings to `to` of the destination: packed past libhdf5 where
// the target allows, else with H5Dwrite of the same char* array.
void put(const StringCopy& c, const Selection& to, const char* const* strings, Counts& counts) {
  if (c.target && write_packed(*c.target, to, strings, c.dst_where)) {
    counts.written_packed += to.elements();
    return;
  }
  h5::write(c.dst, to, c.type, strings, c.dst_where);
}

// A block through libhdf5, as copy_slab moves it.
void copy_through_library(const StringCopy& c, const Selection& from, const Selection& to, Counts& counts) {
  h5::Buffer buffer(c.type);
  h5::read(c.src, from, buffer, c.src_where);
  put(c, to, static_cast<const char* const*>(buffer.data()), counts);
  counts.read_slow += from.elements();
}

// A Large block: its rows (along its first non-single axis) in pieces
// whose string bytes fit the budget, every piece checked before the first
// is written; false if it does not parse (nothing written).
bool copy_large(const StringCopy& c, Heaps& heaps, Strings& s, const Selection& from, const Selection& to,
                Counts& counts) {
  std::size_t k = 0;
  while (k + 1 < from.count.size() && from.count[k] == 1) ++k;
  const std::uint64_t rows = from.count.empty() ? 1 : from.count[k];
  const std::uint64_t row = rows == 0 ? 0 : from.elements() / rows;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pieces;  // rows [begin, end)
  std::uint64_t bytes = 0, begin = 0;
  for (std::uint64_t r = 0; r < rows; ++r) {
    const std::uint64_t add = string_bytes(s, r * row, (r + 1) * row);
    if (r > begin && bytes + add > c.budget) {
      pieces.emplace_back(begin, r);
      begin = r;
      bytes = 0;
    }
    bytes += add;
  }
  pieces.emplace_back(begin, rows);
  if (!gather(heaps, s, 0, s.refs.size(), false)) return false;
  for (const auto& [b, e] : pieces) {
    Shape offset(from.count.size(), 0), count = from.count;
    if (!count.empty()) {
      offset[k] = b;
      count[k] = e - b;
    }
    if (!gather(heaps, s, b * row, e * row))
      throw Error(c.src_where.describe() + ": strings changed while being read (the file was modified)");
    put(c, to.part(offset, count), s.pointers.data(), counts);
  }
  return true;
}

// Blocks read from the source's heap on a thread of their own while the
// block before is written.
void copy_blocks(const StringCopy& c, const Records& source, const std::vector<std::pair<Selection, Selection>>& blocks,
                 const Policy& policy, Counts& counts) {
  Heaps heaps(source, c.budget);
  const auto read_block = [&](std::size_t i) {
    return std::async(std::launch::async, [&, i] { return prepare(source, heaps, blocks[i].first, c.budget); });
  };
  const std::size_t element = h5::size_of(c.type, c.src_where);
  std::future<Prepared> next = read_block(0);  // destroyed (waited for) before what it reads
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    run::throw_if_interrupted();
    run::note_activity(c.src_where.file, c.src_where.path);
    const auto& [a, b] = blocks[i];
    Prepared p = next.get();
    const bool ready = p.kind == Prepared::Kind::Ready;
    if (ready && i + 1 < blocks.size()) next = read_block(i + 1);  // read while this one is written
    if (ready) {
      put(c, b, p.strings.pointers.data(), counts);
    } else if (p.kind != Prepared::Kind::Large || !copy_large(c, heaps, p.strings, a, b, counts)) {
      copy_through_library(c, a, b, counts);
    }
    if (!ready && i + 1 < blocks.size()) next = read_block(i + 1);
    run::count_bytes(policy.meter, a.elements() * element);
  }
}

}  // namespace

bool copy_heap_strings(hid_t src, const h5::Location& src_where, const Selection& from, hid_t dst,
                       const h5::Location& dst_where, const Selection& to, const Policy& policy) {
  if (!policy.byte_paths) return false;
  const h5::Id type = h5::type_of(src, src_where);
  const auto source = source_of(src, type.get(), src_where);
  const auto target = target_of(dst, type.get(), dst_where);
  if (!source && !target) return false;
  // Two blocks are in memory at once (one read, one written): each has half the budget.
  const std::uint64_t budget = std::max<std::uint64_t>(policy.buffer_bytes / 2, 1);
  const StringCopy c{src, src_where, dst, dst_where, type.get(), budget, target ? &*target : nullptr};
  std::vector<std::pair<Selection, Selection>> blocks;
  for_each_block(from.count, std::clamp<std::uint64_t>(c.budget / kPerElement, 1, kBlockElements),
                 [&](const Shape& offset, const Shape& block) {
                   blocks.emplace_back(from.part(offset, block), to.part(offset, block));
                 });
  Counts counts;
  if (source) {
    copy_blocks(c, *source, blocks, policy, counts);
  } else {
    const std::size_t element = h5::size_of(c.type, src_where);
    for (const auto& [a, b] : blocks) {
      run::throw_if_interrupted();
      copy_through_library(c, a, b, counts);
      run::count_bytes(policy.meter, a.elements() * element);
    }
  }
  spdlog::debug("{}: {} strings read from the global heap, {} through libhdf5", dst_where.describe(),
                from.elements() - counts.read_slow, counts.read_slow);
  spdlog::debug("{}: {} strings written to the global heap, {} through libhdf5", dst_where.describe(),
                counts.written_packed, from.elements() - counts.written_packed);
  return true;
}

}  // namespace mb::io::transfer
