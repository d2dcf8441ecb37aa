#pragma once
// The objects directly under an S3 prefix (ListObjectsV2 with delimiter
// "/", page by page): what finish and a shard see of a split on a store,
// as a directory listing shows it locally.
#include <cstdint>
#include <string>
#include <vector>

#include "core/remote.hpp"
#include "io/remote/request.hpp"

namespace mb::io::remote {

struct Listed {
  std::string name;  // the key without the prefix
  std::uint64_t size = 0;
  std::string modified;  // LastModified, as the store gives it
};

// One page of a ListObjectsV2 answer: its objects (keys as given) and the
// token of the next page ("" on the last).
struct ListPage {
  std::vector<Listed> objects;
  std::string next;
};
ListPage parse_list_page(const std::string& xml);

// Every object directly under `where.prefix`, by name (keys in "folders" below it are left out).
std::vector<Listed> list_prefix(Client& client, const S3Listing& where);

}  // namespace mb::io::remote
