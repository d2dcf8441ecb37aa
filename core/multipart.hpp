#pragma once
// How a file goes up to S3: in one PUT, or as a multipart upload of parts
// of a fixed size, and the small texts those requests carry. Pure.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mb {

// Files of this size or more go up as multipart uploads.
inline constexpr std::uint64_t kMultipartThreshold = 16ull << 20;
// Their parts are this large (the last one shorter), doubled for files so
// large that they would have more parts than S3 allows.
inline constexpr std::uint64_t kPartSize = 8ull << 20;
inline constexpr std::uint64_t kMostParts = 10000;

bool is_multipart(std::uint64_t size);
// The size of every part of a file of `size` bytes but the last.
std::uint64_t part_size(std::uint64_t size);
std::uint64_t part_count(std::uint64_t size);

// `text` percent-encoded as a query value in Signature V4's canonical form
// (unreserved characters kept, everything else %XX).
std::string query_escape(std::string_view text);

// The CompleteMultipartUpload document for parts 1..N with these ETags.
std::string complete_document(const std::vector<std::string>& etags);

// An ETag without its quotes (and without a W/ prefix).
std::string unquoted(std::string_view etag);

// Whether `etag` (unquoted) is an MD5 digest in hex (32 hex digits), as
// S3 gives for a plain PUT and each part; a store that encrypts with KMS
// gives other ETags, which say nothing about the bytes.
bool is_md5_etag(std::string_view etag);

// The ETag S3 gives a completed multipart upload: the MD5 of the parts'
// binary MD5s, "-" and the number of parts. `part_md5s` are hex digests;
// `md5_of` hashes bytes (the caller's MD5).
std::string multipart_etag(const std::vector<std::string>& part_md5s,
                           std::string (*md5_of)(const std::string& bytes));

}  // namespace mb
