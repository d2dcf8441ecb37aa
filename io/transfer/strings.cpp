#include "io/transfer/strings.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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
#include "io/h5/space.hpp"
#include "io/h5/types.hpp"
#include "io/transfer/file_bytes.hpp"

namespace mb::io::transfer {
namespace {

// Bytes per element in a block: its stored record and its char*.
constexpr std::uint64_t kPerElement = 16 + sizeof(char*);
// Elements per block at most: blocks are read on a thread of their own
// while the block before is written, so several make a copy.
constexpr std::uint64_t kBlockElements = 1u << 15;

// Where a qualifying dataset's element records are.
struct Records {
  int fd = -1;
  std::uint64_t offset = 0;
  heap::Sizes sizes;
  Shape dims;
};

// An error or the end of the file: false (libhdf5 then reads it, and reports it).
bool pread_all(int fd, unsigned char* out, std::size_t n, std::uint64_t at) {
  return read_at(fd, out, n, at) == static_cast<std::int64_t>(n);
}

// The file's side: opened with `intent` (a read-only input has nothing
// unflushed; an output is ours), POSIX driver, no user block (heap
// addresses are then file offsets), sizes this decoder knows.
std::optional<Records> file_side(hid_t file, unsigned intent, const h5::Location& where) {
  unsigned opened = 0;
  h5::check(H5Fget_intent(file, &opened), where, "cannot read the file's access mode");
  if (opened != intent) return std::nullopt;
  h5::Id fcpl(H5Fget_create_plist(file), where, "cannot read the file creation properties");
  hsize_t userblock = 0;
  std::size_t address = 0, length = 0;
  h5::check(H5Pget_userblock(fcpl.get(), &userblock), where, "cannot read the user block size");
  h5::check(H5Pget_sizes(fcpl.get(), &address, &length), where, "cannot read the file's address sizes");
  Records r;
  r.sizes = {static_cast<unsigned>(address), static_cast<unsigned>(length)};
  if (userblock != 0 || !r.sizes.supported()) return std::nullopt;
  const std::optional<int> fd = descriptor_of(file, where);
  if (!fd) return std::nullopt;
  r.fd = *fd;
  return r;
}

// A contiguous, allocated dataset of variable-length strings (creation
// properties `dcpl`), in a file opened with `intent`, whose storage is
// exactly one element record per element.
std::optional<Records> records_of(hid_t dataset, hid_t dcpl, hid_t file, hid_t type, unsigned intent,
                                  const h5::Location& where) {
  if (H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) <= 0) return std::nullopt;
  if (h5::layout_of(dcpl, where) != H5D_CONTIGUOUS || h5::filter_count(dcpl, where) != 0 ||
      h5::check(H5Pget_external_count(dcpl), where, "cannot read external files") != 0)
    return std::nullopt;
  const haddr_t address = H5Dget_offset(dataset);
  if (address == HADDR_UNDEF) {
    h5::forget_error();  // never written (an input: libhdf5 gives the fill value), or not allocated yet
    return std::nullopt;
  }
  auto r = file_side(file, intent, where);
  if (!r) return std::nullopt;
  r->offset = address;
  const h5::SpaceInfo space = h5::dataset_space(dataset, where);
  r->dims = space.dims;
  if (space.null_space || H5Dget_storage_size(dataset) != space.elements() * r->sizes.element()) return std::nullopt;
  return r;
}

std::optional<Records> source_of(hid_t dataset, hid_t type, const h5::Location& where) {
  h5::Id dcpl(H5Dget_create_plist(dataset), where, "cannot read the creation properties");
  h5::Id file(H5Iget_file_id(dataset), where, "cannot find the file of");
  return records_of(dataset, dcpl.get(), file.get(), type, H5F_ACC_RDONLY, where);
}

// An output dataset whose strings are written past libhdf5: its records in
// place, its collections at the end of its file, in space reserved with
// H5Fincrement_filesize (libhdf5 never allocates below its end of
// allocation, so nothing else is ever put there, and the superblock records
// the new end when the file is closed). Only a dataset of the very type of
// the strings, in a file of 8-byte addresses and lengths (as outputs are
// created), without a fill value of its own: libhdf5 writes that into the
// heap for every element when it allocates the dataset, and H5Dwrite frees
// what it overwrites, which records written past it would not.
struct Target {
  Records records;
  h5::Id file;
};

std::optional<Target> target_of(hid_t dataset, hid_t type, const h5::Location& where) {
  h5::Id stored(H5Dget_type(dataset), where, "cannot read the datatype");
  if (h5::check(H5Tequal(stored.get(), type), where, "cannot compare datatypes") <= 0) return std::nullopt;
  h5::Id dcpl(H5Dget_create_plist(dataset), where, "cannot read the creation properties");
  if (h5::user_fill_value(dcpl.get(), where)) return std::nullopt;
  Target t{{}, h5::Id(H5Iget_file_id(dataset), where, "cannot find the file of")};
  auto r = records_of(dataset, dcpl.get(), t.file.get(), type, H5F_ACC_RDWR, where);
  if (!r || r->sizes.address != 8 || r->sizes.length != 8) return std::nullopt;
  t.records = *r;
  return t;
}

// `bytes` at the end of the target's file, reserved: their address.
std::uint64_t reserve(const Target& t, std::uint64_t bytes, const h5::Location& where) {
  h5::check(H5Fincrement_filesize(t.file.get(), bytes), where, "cannot reserve space in the file");
  haddr_t end = HADDR_UNDEF;
  h5::check(H5Fget_eoa(t.file.get(), &end), where, "cannot read the file's end of allocation");
  return end - bytes;
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

// The first element and count of `s` if it is one run of the dataset's
// elements in storage order (whole along every axis after its first
// non-single one), else none.
std::optional<std::uint64_t> run_start(const Selection& s, const Shape& dims) {
  std::size_t k = 0;
  while (k < s.count.size() && s.count[k] == 1) ++k;
  for (std::size_t d = k; d < s.count.size(); ++d) {
    const bool unit = s.stride.empty() || s.stride[d] == 1;
    if (!unit) return std::nullopt;
    if (d > k && (s.start[d] != 0 || s.count[d] != dims[d])) return std::nullopt;
  }
  return flat_index(dims, s.start);
}

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
  write_bytes(t.records.fd, packed.bytes.data(), packed.bytes.size(), base, where);
  const std::unique_ptr<unsigned char[]> records(new unsigned char[n * element]);
  heap::encode_refs(packed.refs, base, t.records.sizes, records.get());
  write_bytes(t.records.fd, records.get(), n * element, t.records.offset + *first * element, where);
  return true;
}

struct Copy {
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
void put(const Copy& c, const Selection& to, const char* const* strings, Counts& counts) {
  if (c.target && write_packed(*c.target, to, strings, c.dst_where)) {
    counts.written_packed += to.elements();
    return;
  }
  h5::write(c.dst, to, c.type, strings, c.dst_where);
}

// A block through libhdf5, as copy_slab moves it.
void copy_through_library(const Copy& c, const Selection& from, const Selection& to, Counts& counts) {
  h5::Buffer buffer(c.type);
  h5::read(c.src, from, buffer, c.src_where);
  put(c, to, static_cast<const char* const*>(buffer.data()), counts);
  counts.read_slow += from.elements();
}

// A Large block: its rows (along its first non-single axis) in pieces
// whose string bytes fit the budget, every piece checked before the first
// is written; false if it does not parse (nothing written).
bool copy_large(const Copy& c, Heaps& heaps, Strings& s, const Selection& from, const Selection& to,
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
void copy_blocks(const Copy& c, const Records& source, const std::vector<std::pair<Selection, Selection>>& blocks,
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
  h5::Id type(H5Dget_type(src), src_where, "cannot read the datatype");
  const auto source = source_of(src, type.get(), src_where);
  const auto target = target_of(dst, type.get(), dst_where);
  if (!source && !target) return false;
  // Two blocks are in memory at once (one read, one written): each has half the budget.
  const std::uint64_t budget = std::max<std::uint64_t>(policy.buffer_bytes / 2, 1);
  const Copy c{src, src_where, dst, dst_where, type.get(), budget, target ? &*target : nullptr};
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
