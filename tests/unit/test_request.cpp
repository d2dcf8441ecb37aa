#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/remote/request.hpp"
#include "io/run/fd.hpp"

namespace {

// One connection on loopback: reads a request's head and `body_bytes` of its
// body (all of it when negative), sets `cancel`, then answers 200 unless the
// client hangs up first. libcurl asks its progress callback at least once a
// second, so a client that ends its request on the cancel has hung up well
// within the wait.
class OneRequest {
 public:
  OneRequest(std::atomic<bool>& cancel, long body_bytes) : cancel_(cancel), body_bytes_(body_bytes) {
    listener_ = mb::io::run::Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof at;
    REQUIRE(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&at), size) == 0);
    REQUIRE(::listen(listener_.get(), 1) == 0);
    REQUIRE(::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&at), &size) == 0);
    port_ = ntohs(at.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~OneRequest() { thread_.join(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/bkt/key"; }
  bool hung_up() const { return hung_up_; }

 private:
  void serve() {
    const mb::io::run::Fd peer(::accept(listener_.get(), nullptr, nullptr));
    std::string seen;
    char chunk[65536];
    std::size_t head = std::string::npos;
    long wanted = 0;
    while (head == std::string::npos || static_cast<long>(seen.size() - head) < wanted) {
      const ssize_t n = ::recv(peer.get(), chunk, sizeof chunk, 0);
      if (n <= 0) break;
      seen.append(chunk, static_cast<std::size_t>(n));
      if (head == std::string::npos && (head = seen.find("\r\n\r\n")) != std::string::npos) {
        head += 4;
        const auto at = seen.find("Content-Length: ");
        const long length = at == std::string::npos ? 0 : std::stol(seen.substr(at + 16));
        wanted = body_bytes_ < 0 ? length : body_bytes_;
      }
    }
    cancel_ = true;
    pollfd p{peer.get(), POLLIN, 0};
    // Whatever else arrives (the rest of a body not read) is drained; an end of file is the hang-up.
    while (::poll(&p, 1, 3000) == 1) {
      if (::recv(peer.get(), chunk, sizeof chunk, 0) <= 0) {
        hung_up_ = true;
        return;
      }
    }
    const std::string answer = "HTTP/1.1 200 OK\r\nETag: \"e\"\r\nContent-Length: 0\r\n\r\n";
    (void)!::send(peer.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
  }

  std::atomic<bool>& cancel_;
  long body_bytes_;
  mb::io::run::Fd listener_;
  int port_ = 0;
  std::atomic<bool> hung_up_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("request: a cancel awaits the answer of a request whose body is sent, as the store may still do it") {
  std::atomic<bool> cancel{false};
  OneRequest server(cancel, -1);
  mb::io::remote::Client client(mb::io::remote::settings_from(mb::Settings().environment()), &cancel);
  const mb::RemoteAddress address = mb::resolve_remote(server.url(), mb::Settings());
  const auto answer = client.send(address, {.method = "PUT", .text = "the whole body"});
  CHECK(answer.status == 200);
  CHECK_FALSE(server.hung_up());
  // And the cancel stands: no request starts after it.
  CHECK_THROWS_WITH_AS(client.send(address, {.method = "PUT", .text = "x"}), doctest::Contains("upload abandoned"),
                       mb::Error);
}

TEST_CASE("request: a cancel ends at once a request whose body is not all sent") {
  std::atomic<bool> cancel{false};
  OneRequest server(cancel, 1 << 20);  // reads a MiB of 64, then cancels
  mb::io::remote::Client client(mb::io::remote::settings_from(mb::Settings().environment()), &cancel);
  const mb::RemoteAddress address = mb::resolve_remote(server.url(), mb::Settings());
  CHECK_THROWS_WITH_AS(client.send(address, {.method = "PUT", .text = std::string(64u << 20, 'b')}),
                       doctest::Contains("upload abandoned"), mb::Error);
  CHECK(server.hung_up());
}
