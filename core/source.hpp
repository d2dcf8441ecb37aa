#pragma once
// An input as the command line names it, resolved once: a local path, or
// a remote object (core/remote.hpp) with the address its requests go to.
// Everything downstream (opening, digests, messages, the manifest beside
// it) takes a Source and decides nothing about the name again.
#include <optional>
#include <string>
#include <string_view>

#include "core/remote.hpp"
#include "core/settings.hpp"

namespace mb {

class Source {
 public:
  Source() = default;  // no input yet (a job being filled in)
  // Throws mb::Error for a malformed URL or one of a scheme microbatch
  // does not read (usage errors: core/remote.hpp check_place) or credentials
  // that cannot be found: before anything is read.
  static Source resolve(std::string name, const Settings& settings);
  // A local file by a path this process made (a temporary, a team's
  // scratch file, a file of a local split directory), shown as `shown` (a
  // temporary's final name) or as its path.
  static Source local(std::string path, std::string shown = {});

  const std::string& name() const { return name_; }  // as given
  const std::string& shown() const { return shown_; }  // for messages: no query, no credentials
  bool is_remote() const { return address_.has_value(); }
  const RemoteAddress& address() const { return *address_; }  // is_remote() only
  // What resolved it: the place that holds it is opened alike.
  const Settings& settings() const { return settings_; }

  // Its file name in its directory (a URL's without the query).
  std::string file_name() const;
  // The file `file` in the same directory (or under the same URL prefix);
  // a query is not carried over, the address is resolved the same way.
  Source beside(std::string_view file) const;

 private:
  Source(std::string name, std::string shown, std::optional<RemoteAddress> address, Settings settings);

  std::string name_;
  std::string shown_;
  std::optional<RemoteAddress> address_;
  Settings settings_;  // that resolved it: its neighbours are resolved alike
};

}  // namespace mb
