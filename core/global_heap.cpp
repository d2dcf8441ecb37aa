#include "core/global_heap.hpp"

#include <cstring>

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
std::size_t object_header(const Sizes& sizes) { return 2 + 2 + 4 + sizes.length; }

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

}  // namespace mb::heap
