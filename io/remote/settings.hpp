#pragma once
// How every request to a remote object behaves: timeouts, retries, the CA.
#include <string>

#include "core/launcher.hpp"  // Environment
#include "core/settings.hpp"  // temporary_directory

namespace mb::io::remote {

// How requests behave, from the environment: MICROBATCH_HTTP_TIMEOUT
// (seconds a connection may take, and a response may run slower than the
// minimum rate, before the request fails; default 30),
// MICROBATCH_HTTP_MIN_RATE (that rate in bytes per second, default 16384:
// a server trickling a byte at a time is a stall, not progress) and
// AWS_CA_BUNDLE (the CA certificates https servers are checked against).
struct Settings {
  unsigned timeout_seconds = 30;
  unsigned min_rate = 16384;
  unsigned attempts = 3;
  std::string ca_bundle;
  std::string temporary_directory = "/tmp";  // $TMPDIR: where a server's whole answer is kept (LocalCopy)
};
Settings settings_from(const Environment& env);

}  // namespace mb::io::remote
