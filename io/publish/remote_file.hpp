#pragma once
// merge -o s3://BUCKET/KEY.h5: the merged file is written to a local spool
// and uploaded once complete (io/remote/upload.hpp: multipart from 16 MiB,
// checked), so the object appears only whole. An existing object is
// refused unless `force`; the store, bucket and credentials are tried
// before any work. A run that fails uploads nothing (a multipart upload in
// flight is aborted) and leaves no spool.
#include <cstdint>
#include <functional>
#include <string>

#include "core/remote.hpp"
#include "core/settings.hpp"
#include "io/publish/outputs.hpp"

namespace mb::io::publish {

class RemoteFile {
 public:
  RemoteFile(const std::string& url, bool force, const Settings& settings);
  RemoteFile(const RemoteFile&) = delete;
  RemoteFile& operator=(const RemoteFile&) = delete;

  // Where the job writes the file (it must not exist yet).
  const std::string& local() const { return local_; }
  // Uploads the finished local file, telling `uploaded` (if any) the bytes
  // confirmed so far after each part; returns its size.
  std::uint64_t publish(const std::function<void(std::uint64_t uploaded)>& uploaded = {});

 private:
  RemoteAddress address_;
  std::string local_;
  CreatedDirectories spool_;  // local_'s directory, removed (once empty) when this goes out of scope
};

}  // namespace mb::io::publish
