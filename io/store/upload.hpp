#pragma once
// A run's files published onto an S3 prefix (split -o s3://BUCKET/PREFIX/):
// the prefix claimed before any work (credentials, bucket, an earlier split
// there), the files written to a local spool, each round uploaded by
// publish::Uploader's process while the next is written, and the commit
// object uploaded once every file is confirmed. An earlier split's objects
// that this one does not overwrite (--force) are deleted after it.
#include <memory>
#include <string>

#include "core/remote.hpp"
#include "core/settings.hpp"
#include "io/store/store.hpp"

namespace mb::io::store {

// One object (merge -o s3://BUCKET/KEY.h5), checked before any work,
// written to a spool under $TMPDIR and uploaded whole (multipart from
// 16 MiB, checked: io/remote/upload.hpp), so that it appears only whole; a
// run that fails uploads nothing and leaves no spool.
std::unique_ptr<FilePublication> prefix_file(const RemoteAddress& address, bool force);

// The prefix a run's files go to: its Store, its URL ending in "/", what
// resolves its members' addresses, and its options.
struct PrefixTarget {
  WritableStore& store;
  std::string base;
  Settings settings;
  WriteOptions options;
};

// A run's files onto `prefix`, on what the run claimed (Claims).
std::unique_ptr<Publication> prefix_publication(const PrefixTarget& prefix, const PublicationPlan& plan,
                                                Claims claims);

}  // namespace mb::io::store
