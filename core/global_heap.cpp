#include "core/global_heap.hpp"

#include <cstring>
#include <limits>

#include "core/error.hpp"

namespace mb::heap {
namespace {

constexpr unsigned char kMagic[4] = {'G', 'C', 'O', 'L'};
constexpr unsigned char kVersion = 1;

std::uint64_t little_endian(const unsigned char* p, unsigned bytes) {
  std::uint64_t v = 0;
  for (unsigned k = bytes; k-- > 0;) v = (v << 8) | p[k];
  return v;
}

std::uint64_t align8(std::uint64_t n) { return (n + 7) & ~std::uint64_t{7}; }

// Object header: index (2), reference count (2), reserved (4), size.
std::size_t object_header(const Sizes& sizes) { return align8(2 + 2 + 4 + sizes.length); }

void put(unsigned char* p, std::uint64_t v, unsigned bytes) {
  for (unsigned k = 0; k < bytes; ++k) p[k] = static_cast<unsigned char>(v >> (8 * k));
}

constexpr std::uint64_t kMinCollection = 4096;   // H5HG_MINSIZE
constexpr std::uint64_t kMaxCollection = 65536;  // H5HG_MAXSIZE

// Where pack() puts each string: collections' sizes, each string's
// collection (by its start) and index, in one pass over the lengths.
struct Layout {
  std::vector<std::uint64_t> collections;  // sizes, in order
  std::uint64_t total = 0, free = 0;
};

Layout lay_out(std::vector<Ref>& refs, const Sizes& sizes) {
  Layout out;
  const std::uint64_t header = header_bytes(sizes), object = object_header(sizes);
  std::uint64_t used = 0;  // of the open collection; 0: none open
  std::uint32_t index = 0;
  const auto close = [&] {
    if (used == 0) return;
    const std::uint64_t size = std::max(used, kMinCollection);
    out.collections.push_back(size);
    out.total += size;
    out.free += size - used;
    used = 0;
  };
  for (Ref& ref : refs) {
    if (ref.index == 0) continue;  // null
    const std::uint64_t need = object + align8(ref.length);
    if (used != 0 && used + need > kMaxCollection) close();
    if (used == 0) {
      used = header;
      index = 0;
    }
    ref.address = out.total;
    ref.index = ++index;
    used += need;
  }
  close();
  return out;
}

// Writes a collection's header and, after `used` bytes of objects, its free-space object.
void frame(unsigned char* at, std::uint64_t size, std::uint64_t used, const Sizes& sizes) {
  std::memcpy(at, kMagic, 4);
  at[4] = kVersion;
  put(at + 8, size, sizes.length);
  // The free space's size counts its header; a tail too small for one is left bare.
  if (size - used >= object_header(sizes)) put(at + used + 8, size - used, sizes.length);
}

}  // namespace

bool Sizes::supported() const {
  const auto ok = [](unsigned n) { return n == 2 || n == 4 || n == 8; };
  return ok(address) && ok(length);
}

std::optional<Ref> decode_ref(const unsigned char* bytes, const Sizes& sizes) {
  Ref ref;
  ref.length = static_cast<std::uint32_t>(little_endian(bytes, 4));
  bool undefined = true;  // libhdf5 decodes all bits set as the undefined address
  for (unsigned k = 0; k < sizes.address; ++k) undefined = undefined && bytes[4 + k] == 0xff;
  if (undefined) return std::nullopt;
  ref.address = little_endian(bytes + 4, sizes.address);
  ref.index = static_cast<std::uint32_t>(little_endian(bytes + 4 + sizes.address, 4));
  return ref;
}

std::size_t header_bytes(const Sizes& sizes) { return align8(4 + 1 + 3 + sizes.length); }

std::optional<std::uint64_t> collection_size(std::span<const unsigned char> header, const Sizes& sizes) {
  if (header.size() < header_bytes(sizes) || std::memcmp(header.data(), kMagic, 4) != 0 || header[4] != kVersion)
    return std::nullopt;
  const std::uint64_t size = little_endian(header.data() + 8, sizes.length);
  if (size < header_bytes(sizes)) return std::nullopt;
  return size;
}

std::optional<std::vector<Object>> parse_collection(std::span<const unsigned char> bytes, const Sizes& sizes) {
  const auto size = collection_size(bytes, sizes);
  if (!size || *size != bytes.size()) return std::nullopt;
  std::vector<Object> objects;
  const std::size_t hdr = object_header(sizes);
  for (std::size_t p = header_bytes(sizes); p < bytes.size();) {
    if (p + hdr > bytes.size()) break;  // too small for an object header: free space
    const unsigned index = static_cast<unsigned>(little_endian(bytes.data() + p, 2));
    const std::uint64_t length = little_endian(bytes.data() + p + 8, sizes.length);
    // The free-space object's size counts its own header; another's does not.
    const std::uint64_t need = index > 0 ? hdr + align8(length) : length;
    if (need == 0 || need > bytes.size() - p) return std::nullopt;
    if (index > 0) {
      if (length > bytes.size() - p - hdr) return std::nullopt;
      if (index >= objects.size()) objects.resize(index + 1);
      objects[index] = {p + hdr, length, true};
    }
    p += static_cast<std::size_t>(need);
  }
  return objects;
}

Packed pack(std::span<const char* const> strings, const Sizes& sizes) {
  Packed p;
  p.refs.resize(strings.size());
  for (std::size_t i = 0; i < strings.size(); ++i) {
    if (strings[i] == nullptr) continue;
    const std::size_t length = std::strlen(strings[i]);
    if (length > std::numeric_limits<std::uint32_t>::max())
      throw Error("a string of 4 GiB or more cannot be stored as a variable-length string");
    p.refs[i] = {static_cast<std::uint32_t>(length), 0, 1};  // index 1: not null (lay_out numbers them)
  }
  const Layout layout = lay_out(p.refs, sizes);
  p.bytes.assign(layout.total, 0);
  p.free = layout.free;
  const std::uint64_t header = header_bytes(sizes), object = object_header(sizes);
  std::size_t c = 0;          // the collection being filled
  std::uint64_t start = 0, used = header;
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const Ref& ref = p.refs[i];
    if (ref.index == 0) continue;
    if (ref.address != start) {  // the next collection
      frame(p.bytes.data() + start, layout.collections[c], used, sizes);
      start += layout.collections[c++];
      used = header;
    }
    unsigned char* at = p.bytes.data() + start + used;
    put(at, ref.index, 2);  // reference count and reserved bytes stay 0
    put(at + 8, ref.length, sizes.length);
    std::memcpy(at + object, strings[i], ref.length);
    used += object + align8(ref.length);
  }
  if (!layout.collections.empty()) frame(p.bytes.data() + start, layout.collections[c], used, sizes);
  return p;
}

void encode_refs(std::span<const Ref> refs, std::uint64_t base, const Sizes& sizes, unsigned char* out) {
  for (const Ref& ref : refs) {
    const bool null = ref.index == 0;
    put(out, null ? 0 : ref.length, 4);
    put(out + 4, null ? 0 : base + ref.address, sizes.address);
    put(out + 4 + sizes.address, ref.index, 4);
    out += sizes.element();
  }
}

}  // namespace mb::heap
