#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>

#include "core/error.hpp"
#include "core/shards.hpp"

using mb::FileRange;
using mb::share_of;

TEST_CASE("shards: the shares cover the files contiguously, in order, and differ by at most one") {
  for (std::uint64_t files : {0, 1, 2, 7, 10, 64, 1001})
    for (std::uint64_t parts : {1, 2, 3, 5, 8, 64, 2000}) {
      std::uint64_t next = 0, least = files, most = 0;
      for (std::uint64_t k = 0; k < parts; ++k) {
        const FileRange r = share_of(files, parts, k);
        CHECK(r.begin == next);
        next = r.end;
        least = std::min(least, r.size());
        most = std::max(most, r.size());
      }
      CHECK(next == files);
      CHECK(most - least <= 1);
    }
}

TEST_CASE("shards: -j's partition inside a shard is the same partition of the shard's range") {
  CHECK(share_of(7, 3, 1) == FileRange{2, 4});
  CHECK(share_of(FileRange{4, 7}, 2, 0) == FileRange{4, 5});
  CHECK(share_of(FileRange{4, 7}, 2, 1) == FileRange{5, 7});
  CHECK(share_of(FileRange{0, 7}, 3, 2) == share_of(7, 3, 2));
}

TEST_CASE("shards: --shard K/P and auto") {
  const std::map<std::string, std::string> none;
  CHECK(mb::parse_shard("0/1", none).index == 0);
  CHECK(mb::parse_shard("2/5", none).count == 5);
  for (const char* bad : {"5/5", "1/0", "-1/2", "1/-2", "a/2", "2", "1/2/3", " 1/2", "1/ 2", "", "/", "1/", "+1/2",
                          "99999999999999999999/1"}) {
    CAPTURE(bad);
    try {
      mb::parse_shard(bad, none);
      FAIL("accepted");
    } catch (const mb::Error& e) {
      CHECK(e.exit_code() == 2);
    }
  }
  const std::map<std::string, std::string> slurm{
      {"SLURM_ARRAY_TASK_ID", "7"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "5"}};
  const mb::Shard s = mb::parse_shard("auto", slurm);
  CHECK(s.index == 2);
  CHECK(s.count == 4);
  CHECK_THROWS_AS(mb::parse_shard("auto", none), mb::Error);
  auto beyond = slurm;
  beyond["SLURM_ARRAY_TASK_ID"] = "9";  // 9 - 5 = 4: not below 4
  CHECK_THROWS_AS(mb::parse_shard("auto", beyond), mb::Error);
  auto below = slurm;
  below["SLURM_ARRAY_TASK_ID"] = "4";
  CHECK_THROWS_AS(mb::parse_shard("auto", below), mb::Error);
}

TEST_CASE("shards: a run's files are handed on in rounds, each once, those that stand never") {
  mb::Handing handing({2, 9}, 3, 10);
  CHECK(handing.rounds() == std::vector<mb::FileRange>{{2, 5}, {5, 8}, {8, 9}});
  handing.stands(3);
  CHECK(handing.take({2, 5}) == std::vector<std::uint64_t>{2, 4});
  CHECK(handing.take({4, 6}) == std::vector<std::uint64_t>{5});  // 4 went already
  CHECK(handing.take({2, 6}).empty());
  // Round 0: one round of them all; a run with no files has no round.
  CHECK(mb::Handing({2, 9}, 0, 10).rounds() == std::vector<mb::FileRange>{{2, 9}});
  CHECK(mb::Handing({4, 4}, 0, 10).rounds().empty());
  CHECK(mb::Handing({4, 4}, 2, 10).rounds().empty());
}
