#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/source.hpp"
#include "io/source/input.hpp"

namespace {

namespace fs = std::filesystem;

// A file of `text` under the system's temporary directory, removed with it.
struct TextFile {
  fs::path path = fs::temp_directory_path() / ("mb-input-" + std::to_string(::getpid()));
  explicit TextFile(const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
  ~TextFile() { fs::remove(path); }
};

}  // namespace

TEST_CASE("input: a file on disk is sized and versioned from its path, and read by it") {
  const std::string text(1000, 'x');
  const TextFile file(text);
  const mb::Source source = mb::Source::local(file.path.string());
  CHECK(mb::io::source::local_path(source) == file.path.string());
  CHECK(mb::io::source::size(source) == text.size());
  CHECK_THROWS_WITH_AS(mb::io::source::read_all(source, [](const char*, std::size_t) {}),
                       doctest::Contains("is read by its local_path"), mb::Error);
  struct stat st {};
  REQUIRE(::stat(file.path.c_str(), &st) == 0);
  const mb::io::source::Version v = mb::io::source::version(source);
  CHECK(v.size == text.size());
  CHECK(v.modified_ns == st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec);
  CHECK(v.etag.empty());
}

TEST_CASE("input: a file that is not there is an error naming it") {
  const mb::Source source = mb::Source::local("/nonexistent/mb-input.h5");
  CHECK_THROWS_WITH_AS(mb::io::source::size(source), doctest::Contains("/nonexistent/mb-input.h5: cannot stat"),
                       mb::Error);
  CHECK_THROWS_WITH_AS(mb::io::source::version(source), doctest::Contains("/nonexistent/mb-input.h5: cannot stat"),
                       mb::Error);
}

TEST_CASE("input: an object has no path on this machine's disk") {
  const mb::Settings settings;
  const mb::Source source = mb::Source::resolve("https://example.invalid/b.h5", settings);
  CHECK_FALSE(mb::io::source::local_path(source).has_value());
}
