#include "core/multipart.hpp"

#include <fmt/format.h>

#include <cctype>

namespace mb {

bool is_multipart(std::uint64_t size) { return size >= kMultipartThreshold; }

std::uint64_t part_size(std::uint64_t size) {
  std::uint64_t part = kPartSize;
  while ((size + part - 1) / part > kMostParts) part *= 2;
  return part;
}

std::uint64_t part_count(std::uint64_t size) {
  const std::uint64_t part = part_size(size);
  return size == 0 ? 1 : (size + part - 1) / part;
}

std::string query_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~')
      out += c;
    else
      out += fmt::format("%{:02X}", u);
  }
  return out;
}

std::string complete_document(const std::vector<std::string>& etags) {
  std::string xml = "<CompleteMultipartUpload>";
  for (std::size_t i = 0; i < etags.size(); ++i)
    xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>\"{}\"</ETag></Part>", i + 1, unquoted(etags[i]));
  return xml + "</CompleteMultipartUpload>";
}

std::string unquoted(std::string_view etag) {
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return std::string(etag);
}

bool is_md5_etag(std::string_view etag) {
  if (etag.size() != 32) return false;
  for (const char c : etag)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string multipart_etag(const std::vector<std::string>& part_md5s, std::string (*md5_of)(const std::string&)) {
  std::string binary;
  for (const std::string& hex : part_md5s)
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
      binary += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return fmt::format("{}-{}", md5_of(binary), part_md5s.size());
}

}  // namespace mb
