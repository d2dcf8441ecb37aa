#pragma once
// Stores named by URL. An S3 prefix (s3://BUCKET/PREFIX/): members are the
// objects directly under it, listed with ListObjectsV2, read by ranges,
// written by PUT, removed by DELETE; it has no lock. An HTTP(S) location:
// members are read by ranges; it can be neither listed nor written.
#include <memory>
#include <string>

#include "io/store/store.hpp"

namespace mb::io::store {

// `prefix` ends in "/"; `settings` resolve every member's address.
std::unique_ptr<WritableStore> s3_prefix(std::string prefix, const Settings& settings,
                                         const WriteOptions& options);
std::unique_ptr<Store> http_location(std::string base, const Settings& settings);

}  // namespace mb::io::store
