// specs/file_names: one grammar for every name a split writes in its
// directory, each name made by one function and read back by its partner,
// and nothing else taken for one.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "specs/file_names.hpp"

using namespace mb::specs;

TEST_CASE("file names: each of a split's own names is read back as what it was made from") {
  CHECK(part_record_name(1, 4) == "part-00001-of-00004.json");
  CHECK(part_record_count(part_record_name(1, 4)) == 4);
  CHECK(journal_name("microbatch-00003.h5") == ".microbatch-00003.h5.journal");
  CHECK(journaled_file(journal_name("microbatch-00003.h5")) == "microbatch-00003.h5");
  CHECK(journaled_file("microbatch-00003.h5") == "microbatch-00003.h5");
  CHECK(temporary_name("manifest.json", 42) == ".manifest.json.tmp-42");
  CHECK(temporary_of(temporary_name(journal_name("microbatch-00003.h5"), 7)) == journal_name("microbatch-00003.h5"));
  CHECK(aside_name("microbatch-00000.h5", 9) == ".microbatch-00000.h5.aside-9");
  CHECK(aside_of(aside_name("microbatch-00000.h5", 9), 9) == "microbatch-00000.h5");
  CHECK(aside_of(aside_name("microbatch-00000.h5", 9), 10) == std::nullopt);  // another process's
  CHECK(scratch_name("m.h5", 1, 3) == ".m.h5.rank-1-of-3.scratch");
  CHECK(scratch_of(scratch_name("m.h5", 1, 3)) == "m.h5");
  CHECK(shard_lock_name(2, 8) == ".microbatch.lock.shard-00002-of-00008");
  CHECK(is_shard_lock_name(shard_lock_name(2, 8)));
  CHECK(file_lock_name("m.h5") == ".m.h5.lock");
}

TEST_CASE("file names: a split's names, final and hidden, and what is none of them") {
  for (const char* name : {"microbatch-00000.h5", "rank-00001-cp-00000-microbatch-00002.nc", "manifest.json",
                           "part-00000-of-00002.json"}) {
    CAPTURE(name);
    CHECK(is_final_split_name(name));
    CHECK(is_split_name(name));
    CHECK(is_split_name(temporary_name(name, 12)));
    CHECK(is_split_name(aside_name(name, 12)));
    CHECK_FALSE(is_final_split_name(temporary_name(name, 12)));
  }
  // A journal entry, and the temporary a run killed as it wrote one leaves.
  CHECK(is_split_name(journal_name("microbatch-00003.h5")));
  CHECK(is_split_name(temporary_name(journal_name("microbatch-00003.h5"), 5)));
  CHECK_FALSE(is_final_split_name(journal_name("microbatch-00003.h5")));
  for (const char* name : {"notes.txt", "part-notes.json", "part-1-of-x.json", ".microbatch-00000.h5.tmp-",
                           ".microbatch-00000.h5.tmp-12x", ".microbatch.lock", ".m.h5.lock", "microbatch-.h5",
                           ".notes.txt.tmp-3", "..notes.journal.tmp-3"}) {
    CAPTURE(name);
    CHECK_FALSE(is_split_name(name));
  }
  CHECK(part_record_count("part-00001-of-99999999999999999999999.json") == 0);  // no split's
  CHECK(temporary_of("microbatch-00000.h5") == std::nullopt);
  CHECK(temporary_of(".tmp-3") == std::nullopt);
  CHECK(scratch_of(".m.h5.rank-1-of-.scratch") == std::nullopt);
  CHECK_FALSE(is_shard_lock_name(".microbatch.lock.shard-1"));
}
