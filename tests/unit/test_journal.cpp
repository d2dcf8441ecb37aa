#include <doctest/doctest.h>

#include <string>

#include "specs/journal.hpp"

using mb::specs::FileRecord;
using mb::specs::journal_name;
using mb::specs::journal_text;
using mb::specs::parse_journal;

namespace {
const std::string kRun = "0123456789abcdef0123456789abcdef";
const FileRecord kFile{"microbatch-00003.h5", 12345, "00112233445566778899aabbccddeeff"};
}  // namespace

TEST_CASE("a journal entry names its file beside it, hidden, and is told from other names") {
  CHECK(journal_name("microbatch-00003.h5") == ".microbatch-00003.h5.journal");
  CHECK(mb::specs::is_journal_name(".microbatch-00003.h5.journal"));
  CHECK(mb::specs::is_journal_name(".rank-001-microbatch-00002.nc.journal"));
  CHECK_FALSE(mb::specs::is_journal_name("microbatch-00003.h5.journal"));     // not hidden
  CHECK_FALSE(mb::specs::is_journal_name(".microbatch-00003.h5.tmp-12"));     // a temporary
  CHECK_FALSE(mb::specs::is_journal_name(".notes.txt.journal"));              // no split output's
  CHECK_FALSE(mb::specs::is_journal_name(".journal"));
}

TEST_CASE("a journal entry reads back as the record it was written from, for its run and file only") {
  const std::string text = journal_text(kRun, kFile);
  REQUIRE(parse_journal(text, kRun, kFile.name) == kFile);
  CHECK_FALSE(parse_journal(text, "ffffffffffffffffffffffffffffffff", kFile.name));  // another run's
  CHECK_FALSE(parse_journal(text, kRun, "microbatch-00004.h5"));                     // another file's
}

TEST_CASE("a damaged journal entry is never trusted") {
  const std::string text = journal_text(kRun, kFile);
  CHECK_FALSE(parse_journal("", kRun, kFile.name));
  CHECK_FALSE(parse_journal(text.substr(0, text.size() / 2), kRun, kFile.name));  // truncated
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"12345", "-12345"},
                                 {"\"size\":12345", "\"size\":\"12345\""},
                                 {"00112233", "0011223G"},
                                 {"00112233445566778899aabbccddeeff", "0011"},
                                 {"\"version\":1", "\"version\":2"},
                                 {"microbatch-journal", "microbatch-manifest"},
                                 {"}", ",\"extra\":1}"}}) {
    std::string bad = text;
    REQUIRE(bad.find(from) != std::string::npos);
    bad.replace(bad.find(from), from.size(), to);
    CAPTURE(bad);
    CHECK_FALSE(parse_journal(bad, kRun, kFile.name));
  }
}

TEST_CASE("a journal entry tells its run when well formed, and nothing when it is damaged") {
  const std::string text = journal_text(kRun, kFile);
  CHECK(mb::specs::journal_run(text, kFile.name) == kRun);
  CHECK(mb::specs::journal_run(journal_text("ffffffffffffffffffffffffffffffff", kFile), kFile.name) ==
        "ffffffffffffffffffffffffffffffff");  // another run's: still well formed
  CHECK_FALSE(mb::specs::journal_run(text.substr(0, text.size() / 2), kFile.name));  // torn
  CHECK_FALSE(mb::specs::journal_run(text, "microbatch-00004.h5"));                 // another file's
  CHECK_FALSE(mb::specs::journal_run("", kFile.name));
}
