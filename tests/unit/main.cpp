// The unit tests' main: doctest's, and a run in which no test case passes
// the filters fails. ctest runs each test case by its name
// (doctest_discover_tests), and a name that ctest's lists cut at a ';'
// matches nothing: without this, such a test would pass without running.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

unsigned selected = 0;  // test cases that passed the filters, as the last run counted them
bool ran = false;

// A listener that keeps the run's count; it reports nothing itself.
struct SelectedCount : doctest::IReporter {
  explicit SelectedCount(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    ran = true;
    selected = stats.numTestCasesPassingFilters;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("selected-count", 1, SelectedCount);

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit() || !ran) return result;  // --help, --list-test-cases and other queries
  if (selected == 0) {
    std::fputs("unit_tests: no test case matches the filters (a name with ';' is cut there by ctest)\n", stderr);
    return 1;
  }
  return result;
}
