// io/merge in-process. Its checks on inputs in memory (h5_memory.hpp): a
// replicated dataset equal in two inputs passes, and a differing element,
// another dtype, another rank or a missing member is refused, naming the
// inputs and the path. The whole job on two small files of a temporary
// directory, in a child process: rows concatenated, replicated values
// kept, unequal ones refused with nothing left behind.
#include <doctest/doctest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/merge_plan.hpp"
#include "core/resolve.hpp"
#include "core/source.hpp"
#include "h5_memory.hpp"
#include "helpers.hpp"
#include "io/h5/library.hpp"
#include "io/merge/checks.hpp"
#include "io/merge/merge.hpp"
#include "io/merge/steps.hpp"
#include "io/merge/weights.hpp"
#include "io/store/local.hpp"
#include "io/tree/reader.hpp"

namespace {
namespace fs = std::filesystem;
using mb::NodeInfo;
using mb::test::message_of;
using mb::test::h5::Held;
using mb::test::h5::make_dataset;
using mb::test::h5::memory_file;
using mb::test::h5::unique_name;
namespace merge = mb::io::merge;

// Two inputs (open in memory) and what a merge's checks need around them.
struct TwoInputs {
  std::string first = unique_name("merge-a"), second = unique_name("merge-b");
  Held a{memory_file(first)}, b{memory_file(second)};
  merge::MergeJob job;
  mb::Resolution resolution;
  mb::MergePlan plan;
  merge::WeightState weights;
  merge::Carried carried;

  TwoInputs() {
    job.inputs = {{mb::Source::local(first), "microbatch 0 (" + first + ")"},
                  {mb::Source::local(second), "microbatch 1 (" + second + ")"}};
    job.output = "merged.h5";
    carried.budget = 1 << 20;
  }
  merge::Context context(std::size_t input) const { return {job, resolution, plan, weights, a.get(), input}; }

  // The checks of one dataset as the walk makes them: the model's kept at
  // input 0, the second input's compared with it.
  void compare(const std::string& path) {
    const NodeInfo tree = mb::io::tree::read_tree(a, first);
    const NodeInfo* node = tree.child(path.substr(1));
    REQUIRE(node);
    Held model(H5Dopen2(a, path.c_str(), H5P_DEFAULT)), input(H5Dopen2(b, path.c_str(), H5P_DEFAULT));
    (void)merge::describe_pair(context(0), carried, *node, model);
    const merge::Context ctx = context(1);
    const merge::DatasetPair pair = merge::describe_pair(ctx, carried, *node, input);
    merge::require_same_shape(ctx, pair, std::nullopt);
    merge::compare_replicated(ctx, pair);
  }
};

// A small file on disk (the merge job opens its inputs by name).
void write_input(const fs::path& path, const std::vector<std::int32_t>& rows, std::int64_t step) {
  Held file(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT));
  Held x(make_dataset(file, "x", H5T_STD_I32LE, {rows.size() / 2, 2}, H5T_NATIVE_INT32, rows.data()));
  Held s(make_dataset(file, "step", H5T_STD_I64LE, {}, H5T_NATIVE_INT64, &step));
}

// Runs a merge in a child process: a job records its inputs process-wide
// (io/run/identity.hpp, checked before anything is published), and the
// other tests of this process must not inherit them. The job's result: the
// number of datasets merged, or the message it threw.
std::string merge_in_child(const merge::MergeJob& job) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = "datasets " + std::to_string(merge::execute(job, {}).datasets);
    } catch (const std::exception& e) {
      out = e.what();
    }
    for (std::size_t at = 0; at < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + at, out.size() - at);
      if (n <= 0) ::_exit(2);
      at += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fds[0], chunk, sizeof chunk)) > 0;) out.append(chunk, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  return out;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("mb-merge-io-test-" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("merge checks: replicated values equal in both inputs pass, and a differing element is named") {
  mb::io::h5::init_library();
  TwoInputs in;
  const std::vector<double> values{0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
  std::vector<double> changed = values;
  changed[4] = -7.25;
  Held a_same(make_dataset(in.a, "same", H5T_IEEE_F64LE, {3, 2}, H5T_NATIVE_DOUBLE, values.data()));
  Held b_same(make_dataset(in.b, "same", H5T_IEEE_F64LE, {3, 2}, H5T_NATIVE_DOUBLE, values.data()));
  Held a_diff(make_dataset(in.a, "diff", H5T_IEEE_F64LE, {3, 2}, H5T_NATIVE_DOUBLE, values.data()));
  Held b_diff(make_dataset(in.b, "diff", H5T_IEEE_F64LE, {3, 2}, H5T_NATIVE_DOUBLE, changed.data()));

  CHECK(message_of([&] { in.compare("/same"); }) == "(no error)");
  const std::string refused = message_of([&] { in.compare("/diff"); });
  CHECK(refused.rfind("/diff differs between microbatch 0 (" + in.first + ") and microbatch 1 (" + in.second + "): ",
                      0) == 0);
  // Element 4 of a (3, 2) array is [2, 0].
  CHECK(refused.find("4.5") != std::string::npos);
  CHECK(refused.find("-7.25") != std::string::npos);
  CHECK(refused.find("reducer") != std::string::npos);  // what to do about values meant to differ
}

TEST_CASE("merge checks: another dtype, another shape or a missing member is refused, naming both") {
  mb::io::h5::init_library();
  TwoInputs in;
  const std::int32_t four[4] = {1, 2, 3, 4};
  const std::int64_t wide[4] = {1, 2, 3, 4};
  Held a_dtype(make_dataset(in.a, "dtype", H5T_STD_I32LE, {4}, H5T_NATIVE_INT32, four));
  Held b_dtype(make_dataset(in.b, "dtype", H5T_STD_I64LE, {4}, H5T_NATIVE_INT64, wide));
  Held a_shape(make_dataset(in.a, "shape", H5T_STD_I32LE, {4}, H5T_NATIVE_INT32, four));
  Held b_shape(make_dataset(in.b, "shape", H5T_STD_I32LE, {2, 2}, H5T_NATIVE_INT32, four));
  Held a_cols(make_dataset(in.a, "cols", H5T_STD_I32LE, {2, 2}, H5T_NATIVE_INT32, four));
  Held b_cols(make_dataset(in.b, "cols", H5T_STD_I32LE, {1, 4}, H5T_NATIVE_INT32, four));
  Held only_a(make_dataset(in.a, "only_a", H5T_STD_I32LE, {4}, H5T_NATIVE_INT32, four));

  const std::string between = " differs between microbatch 0 (" + in.first + ") and microbatch 1 (" + in.second + "): ";
  CHECK(message_of([&] { in.compare("/dtype"); }) == "/dtype" + between + "dtype int32 vs int64");
  CHECK(message_of([&] { in.compare("/shape"); }) == "/shape" + between + "shape (4,) vs (2, 2)");
  CHECK(message_of([&] { in.compare("/cols"); }) == "/cols" + between + "shape (2, 2) vs (1, 4)");

  const NodeInfo tree = mb::io::tree::read_tree(in.a, in.first);
  Held root(H5Gopen2(in.b, "/", H5P_DEFAULT));
  CHECK(message_of([&] { merge::check_members(in.context(1), tree, root); }) ==
        in.second + ": member /only_a is missing (present in " + in.first + ")");
  // The first input's own members are its tree's.
  Held a_root(H5Gopen2(in.a, "/", H5P_DEFAULT));
  CHECK(message_of([&] { merge::check_members(in.context(1), tree, a_root); }) == "(no error)");
}

TEST_CASE("merge: two files' rows concatenated, a replicated scalar kept, unequal ones refused") {
  mb::io::h5::init_library();
  const TempDir dir;
  const fs::path a = dir.path / "a.h5", b = dir.path / "b.h5", c = dir.path / "c.h5";
  write_input(a, {1, 2, 3, 4, 5, 6}, 9);  // 3 rows
  write_input(b, {7, 8, 9, 10}, 9);       // 2 rows
  write_input(c, {11, 12}, 10);           // another step

  // The default spec: split along axis 0, scalars replicated.
  const auto place = mb::io::store::local_directory(dir.path.string());
  merge::MergeJob job;
  job.inputs = {{mb::Source::local(a.string()), "microbatch 0 (a.h5)"},
                {mb::Source::local(b.string()), "microbatch 1 (b.h5)"}};
  job.place = place.get();
  job.output_name = "merged.h5";
  job.output = (dir.path / "merged.h5").string();
  CHECK(merge_in_child(job) == "datasets 2");
  {
    Held out(H5Fopen(job.output.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    Held x(H5Dopen2(out, "/x", H5P_DEFAULT));
    Held space(H5Dget_space(x));
    hsize_t dims[2] = {};
    REQUIRE(H5Sget_simple_extent_dims(space, dims, nullptr) == 2);
    CHECK(dims[0] == 5);
    CHECK(dims[1] == 2);
    CHECK(mb::test::h5::read_all<std::int32_t>(x, H5T_NATIVE_INT32) ==
          std::vector<std::int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    Held step(H5Dopen2(out, "/step", H5P_DEFAULT));
    CHECK(mb::test::h5::read_all<std::int64_t>(step, H5T_NATIVE_INT64) == std::vector<std::int64_t>{9});
  }

  job.inputs[1] = {mb::Source::local(c.string()), "microbatch 1 (c.h5)"};
  job.output_name = "refused.h5";
  job.output = (dir.path / "refused.h5").string();
  const std::string refused = merge_in_child(job);
  CHECK(refused.rfind("/step differs between microbatch 0 (a.h5) and microbatch 1 (c.h5): 9 vs 10", 0) == 0);
  CHECK_FALSE(fs::exists(job.output));
  // Nothing but the inputs and the first output is left in the directory (no temporaries).
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir.path)) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"a.h5", "b.h5", "c.h5", "merged.h5"});
}
