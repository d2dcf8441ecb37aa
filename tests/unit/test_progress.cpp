// ByteMeter: the count of a piece never passes its size and ends at it
// whatever the copies added; split -j's workers count into shared slots that
// the parent shows summed.
#include <doctest/doctest.h>

#include <unistd.h>

#include <optional>
#include <vector>

#include "io/run/progress.hpp"
#include "io/run/workers.hpp"

namespace {

struct Shown {
  std::vector<std::uint64_t> done;
  std::uint64_t total = 0;
  std::vector<std::optional<std::uint64_t>> uploaded;
  mb::io::run::Progress callback() {
    return [this](const mb::io::run::Tally& tally) {
      done.push_back(tally.done);
      total = tally.total;
      uploaded.push_back(tally.uploaded);
    };
  }
};

}  // namespace

TEST_CASE("progress: a piece's count is capped at its size and counted whole at its end") {
  Shown shown;
  mb::io::run::ByteMeter meter(100, shown.callback());
  meter.add(10);  // outside a piece: not counted
  CHECK(meter.done() == 0);
  meter.begin(60);
  meter.add(25);
  meter.add(25);
  meter.add(25);  // an edge chunk counted whole, say: capped at the piece
  CHECK(meter.done() == 60);
  meter.end();
  meter.begin(40);
  meter.add(5);
  meter.end();  // a piece written without copies that count (offsets, a reduction) still counts whole
  CHECK(meter.done() == 100);
  CHECK(shown.total == 100);
  CHECK(shown.done == std::vector<std::uint64_t>{25, 50, 60, 60, 65, 100});
}

TEST_CASE("progress: workers count in their own slots, only the parent shows, summed") {
  Shown shown;
  mb::io::run::ByteMeter meter(300, shown.callback(), 3);
  const pid_t parent = ::getpid();
  mb::io::run::run_workers(
      3,
      [&](std::uint64_t w) {
        meter.use_slot(w);
        meter.begin(100);
        meter.add(50);
        if (w == 0) ::usleep(300 * 1000);  // the others finish meanwhile
        meter.end();
        if (::getpid() != parent) CHECK(shown.done.empty());  // a worker never shows (its copy of `shown`)
      },
      0, [&] { meter.show(); });
  CHECK(meter.done() == 300);
  REQUIRE(!shown.done.empty());
  CHECK(shown.done.back() == 300);
  meter.show();
  CHECK(shown.done.back() == 300);
}

TEST_CASE("progress: bytes uploaded are shown once there are uploads, beside the bytes written") {
  Shown shown;
  mb::io::run::ByteMeter meter(100, shown.callback());
  meter.begin(100);
  meter.add(40);
  meter.uploaded(0);  // uploads start: shown from now on
  meter.add(60);
  meter.end();
  meter.uploaded(120);  // file bytes, not data bytes: they may pass the total
  REQUIRE(shown.uploaded.size() == 5);
  CHECK(!shown.uploaded[0]);
  CHECK(shown.uploaded[1] == 0u);
  CHECK(shown.uploaded[4] == 120u);
  CHECK(shown.done == std::vector<std::uint64_t>{40, 40, 100, 100, 100});
}
