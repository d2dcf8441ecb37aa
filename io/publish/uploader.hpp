#pragma once
// A split's files on their way to an S3 prefix. The uploads run in a
// process of their own, forked before any thread of ours starts and before
// any HDF5 file is open, so that the writers (this process and its -j
// workers, which fork) never fork with upload threads alive. Under MPI the
// library's own threads are running: the child never calls MPI and ends
// with _exit (docs/cluster.md says what fork needs of the interconnect). It keeps `concurrency`
// uploads going while the next files are written, removes each local copy
// once its upload is confirmed, and puts the manifest last, only after
// every file is confirmed (UploadPlan::commit): the manifest is the commit
// point, and the process that makes it is the one that knows what to undo.
//
// A run that ends without commit() (an error, a signal, a crash, SIGKILL:
// the uploading process sees its socket close) abandons the uploads in
// flight, aborts their multipart uploads and deletes every object it
// created (split --resume: every object not confirmed); what it could not
// delete is logged as one error line.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/remote/settings.hpp"
#include "io/run/fd.hpp"

namespace mb::io::publish {

// One file to upload, and whether its local copy is removed once it is up.
struct UploadItem {
  std::string path;
  RemoteAddress address;
  bool remove = true;
  RemoteAddress journal;  // where its journal entry goes (split --resume), before the file
};

struct UploadPlan {
  std::vector<UploadItem> files;       // by index
  // Puts the commit object (the manifest, or a shard's part record) as
  // commit() asks, in the uploading process once every file is confirmed:
  // io/store's commit, which checks the watched inputs and removes a commit
  // whose answer was lost. Throws remote::Exists when another run's commit
  // stands there.
  std::function<void(const std::string& text)> commit;
  std::vector<RemoteAddress> stale;  // deleted after the commit: an earlier split's objects (--force)
  remote::Settings settings;
  unsigned concurrency = 4;
  std::string spool;  // the run's own spool directory, removed by the process if the run is killed ("": none)
  std::function<void(std::uint64_t bytes)> confirmed;  // after each confirmed file: the bytes up so far
  // split --resume: a file is confirmed once it and its journal entry are
  // up, and stays when the run ends without a manifest (only uploads not
  // confirmed are deleted then).
  bool keep_confirmed = false;
};

class Uploader {
 public:
  explicit Uploader(UploadPlan plan);
  ~Uploader();
  Uploader(const Uploader&) = delete;
  Uploader& operator=(const Uploader&) = delete;

  // File `index` is complete: (split --resume) put its journal entry
  // `journal`, then upload it.
  void upload(std::size_t index, const std::string& journal = "");
  // Waits until at most `at_most` uploads are unconfirmed; throws the first
  // upload's failure, as an mb::Error naming the object.
  void wait_for(std::size_t at_most);
  // Waits for every upload, then uploads `manifest_text` and deletes the
  // stale objects (best effort: those left are logged).
  void commit(const std::string& manifest_text);

  // Ends the uploads without a manifest (waiting while the process deletes
  // what it created): "" or what to add to the run's error, naming the
  // objects it could not delete. The destructor does this when needed.
  std::string abandon();

  std::uint64_t uploaded_bytes() const { return bytes_; }
  std::size_t confirmed() const { return confirmed_; }

 private:
  // Reads what the uploading process reported; blocks up to `wait_ms`.
  void collect(int wait_ms);
  void handle(const std::string& line);
  void throw_if_failed() const;

  UploadPlan plan_;
  pid_t pid_ = -1;
  run::Fd fd_;  // a socket to the uploading process: commands out, reports in
  std::string incoming_;
  std::size_t sent_ = 0, confirmed_ = 0;
  std::uint64_t bytes_ = 0;
  bool committed_ = false, ended_ = false;
  std::optional<Error> failure_;    // the first upload's failure
  std::vector<std::string> left_;  // objects the process could not delete
};

}  // namespace mb::io::publish
