// io/h5, the checked C-API layer, on files in memory (h5_memory.hpp): every
// failing call becomes one mb::Error naming the file and the object, with
// nothing of the library's own on stderr; handles close exactly once; the
// dataspace, selection and attribute wrappers give back what the C API
// wrote.
#include <doctest/doctest.h>
#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/selection.hpp"
#include "h5_memory.hpp"
#include "io/h5/attributes.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/handle.hpp"
#include "io/h5/intern.hpp"
#include "io/h5/library.hpp"
#include "io/h5/object.hpp"
#include "io/h5/space.hpp"
#include "io/h5/types.hpp"

namespace {
namespace h5 = mb::io::h5;
using mb::test::h5::Held;
using mb::test::h5::make_dataset;
using mb::test::h5::memory_file;
using mb::test::h5::stderr_of;
using mb::test::h5::unique_name;

// A failure of `fn`: its message and where it says it happened.
struct Failure {
  bool thrown = false;
  std::string message;
  mb::Where where;
};
template <typename Fn>
Failure failure_of(Fn&& fn) {
  Failure f;
  try {
    fn();
  } catch (const mb::Error& e) {
    f = {true, e.what(), e.where()};
  }
  return f;
}

std::size_t open_datasets(hid_t file) { return static_cast<std::size_t>(H5Fget_obj_count(file, H5F_OBJ_DATASET)); }

}  // namespace

TEST_CASE("h5: a failing call is one error naming file and object, and HDF5 prints nothing") {
  const std::string name = unique_name("fail");
  Held file(memory_file(name));

  // With the library's automatic printing on (its default), the same
  // failure prints the error stack: what stderr_of captures is what a user
  // would see.
  REQUIRE(H5Eset_auto2(H5E_DEFAULT, reinterpret_cast<H5E_auto2_t>(H5Eprint2), stderr) >= 0);
  const std::string loud = stderr_of([&] {
    const hid_t id = H5Oopen(file, "/no/such", H5P_DEFAULT);
    CHECK(id < 0);
  });
  CHECK(loud.find("HDF5-DIAG") != std::string::npos);

  h5::init_library();
  Failure f;
  const std::string printed =
      stderr_of([&] { f = failure_of([&] { h5::open_object(file, "/no/such", {name, "/no/such"}); }); });
  CHECK(printed.empty());
  REQUIRE(f.thrown);
  CHECK(f.message.rfind(name + ": /no/such: cannot open (", 0) == 0);
  CHECK(f.message.back() == ')');  // the library's innermost cause, in parentheses
  CHECK(f.message.find('\n') == std::string::npos);
  CHECK(f.where.file == name);
  CHECK(f.where.object == "/no/such");
  // fail() leaves no error behind for the next call to report.
  CHECK(H5Eget_num(H5E_DEFAULT) == 0);
}

TEST_CASE("h5: failures of attributes and of writes name the object, silently") {
  h5::init_library();
  const std::string name = unique_name("attr-fail");
  Held file(memory_file(name));
  Held dset(make_dataset(file, "d", H5T_STD_I32LE, {4}));

  Failure attr;
  CHECK(stderr_of([&] { attr = failure_of([&] { h5::open_attribute(dset, "missing", {name, "/d"}); }); }).empty());
  REQUIRE(attr.thrown);
  CHECK(attr.message.rfind(name + ": /d@missing: cannot open the attribute", 0) == 0);
  CHECK(attr.where.object == "/d@missing");

  // Rows 3..5 of a dataset of 4: the selection leaves the extent.
  const std::int32_t values[3] = {1, 2, 3};
  Failure write;
  CHECK(stderr_of([&] {
          write = failure_of([&] {
            h5::write(dset, mb::Selection::rows({4}, 0, {3, 3, 1}), H5T_NATIVE_INT32, values, {name, "/d"});
          });
        }).empty());
  REQUIRE(write.thrown);
  CHECK(write.message.rfind(name + ": /d: cannot write data (", 0) == 0);
  CHECK(write.where.file == name);
}

TEST_CASE("h5: Id closes what it owns exactly once, and a moved-from Id closes nothing") {
  h5::init_library();
  Held file(memory_file(unique_name("id")));
  { Held made(make_dataset(file, "d", H5T_STD_I32LE, {4})); }
  REQUIRE(open_datasets(file) == 0);

  hid_t first = H5I_INVALID_HID, second = H5I_INVALID_HID;
  {
    h5::Id a(H5Dopen2(file, "d", H5P_DEFAULT));
    first = a.get();
    CHECK(open_datasets(file) == 1);
    h5::Id b(std::move(a));
    CHECK_FALSE(a.valid());
    CHECK(b.get() == first);
    a.reset();  // owns nothing: closes nothing
    CHECK(H5Iis_valid(first) > 0);

    h5::Id c(H5Dopen2(file, "d", H5P_DEFAULT));
    second = c.get();
    CHECK(open_datasets(file) == 2);
    c = std::move(b);  // c's own dataset is closed, b's is kept
    CHECK(H5Iis_valid(second) == 0);
    CHECK(H5Iis_valid(first) > 0);
    CHECK(open_datasets(file) == 1);
  }
  CHECK(H5Iis_valid(first) == 0);
  CHECK(open_datasets(file) == 0);
}

TEST_CASE("h5: open_object_count, Id::close and share count what is open") {
  h5::init_library();
  const std::size_t before = h5::open_object_count();
  const std::string name = unique_name("count");
  h5::Id file(memory_file(name));
  REQUIRE(file.valid());
  { Held group(H5Gcreate2(file.get(), "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)); }
  CHECK(h5::open_object_count() == before + 1);
  {
    h5::Id group = h5::open_object(file.get(), "/g", {name, "/g"});
    CHECK(h5::open_object_count() == before + 2);
    CHECK(H5Iget_ref(group.get()) == 1);
    {
      h5::Id again = h5::share(group.get());
      CHECK(again.get() == group.get());
      CHECK(H5Iget_ref(group.get()) == 2);
    }
    CHECK(H5Iget_ref(group.get()) == 1);
    CHECK(H5Iis_valid(group.get()) > 0);
  }
  CHECK(h5::open_object_count() == before + 1);
  // No id to share: an invalid Id, and no error left behind or printed.
  CHECK(stderr_of([] { CHECK_FALSE(h5::share(H5I_INVALID_HID).valid()); }).empty());
  CHECK(H5Eget_num(H5E_DEFAULT) == 0);
  const hid_t raw = file.get();
  file.close({name, ""});
  CHECK_FALSE(file.valid());
  CHECK(H5Iis_valid(raw) == 0);
  CHECK(h5::open_object_count() == before);
}

TEST_CASE("h5: dataspaces made and read back: extent, unlimited axes, null and scalar") {
  h5::init_library();
  const h5::Location at{"(memory)", ""};
  const h5::Id space = h5::make_space({5, 3}, {std::nullopt, 4}, at);
  hsize_t dims[2] = {}, max[2] = {};
  REQUIRE(H5Sget_simple_extent_dims(space.get(), dims, max) == 2);
  CHECK(dims[0] == 5);
  CHECK(dims[1] == 3);
  CHECK(max[0] == H5S_UNLIMITED);
  CHECK(max[1] == 4);
  const h5::SpaceInfo info = h5::space_info(space.get(), at);
  CHECK(info.dims == mb::Shape{5, 3});
  REQUIRE(info.max_dims.size() == 2);
  CHECK_FALSE(info.max_dims[0].has_value());
  CHECK(info.max_dims[1] == std::optional<std::uint64_t>(4));
  CHECK(info.elements() == 15);

  // Two rows with stride 2: 2 x 3 elements selected, rows 1 and 3.
  h5::select(space.get(), {{1, 0}, {2, 3}, {2, 1}}, at);
  CHECK(H5Sget_select_npoints(space.get()) == 6);
  hsize_t lo[2] = {}, hi[2] = {};
  REQUIRE(H5Sget_select_bounds(space.get(), lo, hi) >= 0);
  CHECK(lo[0] == 1);
  CHECK(hi[0] == 3);

  const h5::Id null = h5::make_null_space(at);
  const h5::SpaceInfo n = h5::space_info(null.get(), at);
  CHECK(n.null_space);
  CHECK(n.elements() == 0);
  const h5::Id scalar = h5::make_space({}, at);
  CHECK(H5Sget_simple_extent_type(scalar.get()) == H5S_SCALAR);
  CHECK(h5::space_info(scalar.get(), at).elements() == 1);
}

TEST_CASE("h5: a selection written and read is the C API's element for element") {
  h5::init_library();
  const std::string name = unique_name("select");
  Held file(memory_file(name));
  std::vector<std::int32_t> zero(5 * 2, 0);
  Held dset(make_dataset(file, "d", H5T_STD_I32BE, {5, 2}, H5T_NATIVE_INT32, zero.data()));
  const h5::Location at{name, "/d"};

  // Rows 1..3 written through io/h5 (in a big-endian file type: converted).
  const std::int32_t rows[6] = {10, 11, 20, 21, 30, 31};
  h5::write(dset, mb::Selection::rows({5, 2}, 0, {1, 3, 1}), H5T_NATIVE_INT32, rows, at);
  const auto all = mb::test::h5::read_all<std::int32_t>(dset, H5T_NATIVE_INT32);
  CHECK(all == std::vector<std::int32_t>{0, 0, 10, 11, 20, 21, 30, 31, 0, 0});

  // Column 1 of rows 2..4 read through io/h5.
  h5::Buffer buffer(H5T_NATIVE_INT32);
  h5::read(dset, {{2, 1}, {3, 1}, {}}, buffer, at);
  REQUIRE(buffer.elements() == 3);
  const auto* got = static_cast<const std::int32_t*>(buffer.data());
  CHECK(got[0] == 21);
  CHECK(got[1] == 31);
  CHECK(got[2] == 0);
}

TEST_CASE("h5: attributes read from one object and written to another keep name, type and value") {
  h5::init_library();
  const std::string a_name = unique_name("attrs-a"), b_name = unique_name("attrs-b");
  Held a(memory_file(a_name)), b(memory_file(b_name));
  const std::int64_t count = -1234567890123;
  mb::test::h5::set_attribute(a, "count", H5T_STD_I64LE, &count);
  mb::test::h5::set_string_attribute(a, "label", "tiny-llm ünïcode");
  const double weights[3] = {0.5, -2.25, 1e300};
  const hsize_t three = 3;
  {
    Held space(H5Screate_simple(1, &three, nullptr));
    Held attr(H5Acreate2(a, "weights", H5T_IEEE_F64BE, space, H5P_DEFAULT, H5P_DEFAULT));
    REQUIRE(H5Awrite(attr, H5T_NATIVE_DOUBLE, weights) >= 0);
  }

  const h5::Attributes read = h5::read_attributes(a, {a_name, "/"});
  REQUIRE(read.size() == 3);
  CHECK(read[0].first == "count");
  CHECK(read[1].first == "label");
  CHECK(read[2].first == "weights");
  CHECK(read[2].second.shape.dims == mb::Shape{3});
  h5::write_attributes(b, read, {b_name, "/"});

  std::int64_t count_back = 0;
  {
    Held attr(H5Aopen(b, "count", H5P_DEFAULT));
    Held type(H5Aget_type(attr));
    CHECK(H5Tequal(type, H5T_STD_I64LE) > 0);
    REQUIRE(H5Aread(attr, H5T_NATIVE_INT64, &count_back) >= 0);
  }
  CHECK(count_back == count);
  {
    Held attr(H5Aopen(b, "label", H5P_DEFAULT));
    Held type(mb::test::h5::vlen_utf8());
    char* text = nullptr;
    REQUIRE(H5Aread(attr, type, &text) >= 0);
    CHECK(std::string(text) == "tiny-llm ünïcode");
    H5free_memory(text);
  }
  {
    Held attr(H5Aopen(b, "weights", H5P_DEFAULT));
    Held type(H5Aget_type(attr));
    CHECK(H5Tequal(type, H5T_IEEE_F64BE) > 0);  // the file type kept, not the memory one
    double back[3] = {};
    REQUIRE(H5Aread(attr, H5T_NATIVE_DOUBLE, back) >= 0);
    CHECK(back[0] == 0.5);
    CHECK(back[1] == -2.25);
    CHECK(back[2] == 1e300);
  }
}

namespace {
// A C string type: variable-length or of `size` bytes, of `cset` and `pad`.
h5::Id string_type(std::size_t size, H5T_cset_t cset, H5T_str_t pad = H5T_STR_NULLTERM) {
  h5::Id t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t.get(), size);
  H5Tset_cset(t.get(), cset);
  H5Tset_strpad(t.get(), pad);
  return t;
}

// A compound {n: int32, s: `text`}, its members inserted in the order given.
h5::Id record_type(hid_t text, bool text_first) {
  h5::Id t(H5Tcreate(H5T_COMPOUND, 4 + sizeof(char*)));
  if (text_first) H5Tinsert(t.get(), "s", 4, text);
  H5Tinsert(t.get(), "n", 0, H5T_NATIVE_INT32);
  if (!text_first) H5Tinsert(t.get(), "s", 4, text);
  return t;
}
}  // namespace

TEST_CASE("h5: datatypes that differ in a string's character set or padding are not the same") {
  const h5::Location where{"f.h5", "/s"};
  const h5::Id ascii = string_type(H5T_VARIABLE, H5T_CSET_ASCII), utf8 = string_type(H5T_VARIABLE, H5T_CSET_UTF8);
  // What libhdf5 1.10.8 itself answers: the reason for the check.
  CHECK(H5Tequal(ascii.get(), utf8.get()) > 0);
  CHECK_FALSE(h5::same_type(ascii.get(), utf8.get(), where));
  CHECK(h5::same_type(ascii.get(), string_type(H5T_VARIABLE, H5T_CSET_ASCII).get(), where));
  CHECK_FALSE(h5::same_type(ascii.get(), string_type(H5T_VARIABLE, H5T_CSET_ASCII, H5T_STR_NULLPAD).get(), where));
  CHECK_FALSE(h5::same_type(string_type(4, H5T_CSET_ASCII).get(), string_type(4, H5T_CSET_UTF8).get(), where));
  SUBCASE("inside compound, array and variable-length types") {
    CHECK_FALSE(h5::same_type(record_type(ascii.get(), false).get(), record_type(utf8.get(), false).get(), where));
    // Members are matched by name, whatever their order of insertion.
    CHECK(h5::same_type(record_type(ascii.get(), true).get(), record_type(ascii.get(), false).get(), where));
    CHECK_FALSE(h5::same_type(record_type(ascii.get(), true).get(), record_type(utf8.get(), false).get(), where));
    const hsize_t two = 2;
    CHECK_FALSE(h5::same_type(h5::Id(H5Tarray_create2(ascii.get(), 1, &two)).get(),
                              h5::Id(H5Tarray_create2(utf8.get(), 1, &two)).get(), where));
    CHECK_FALSE(h5::same_type(h5::Id(H5Tvlen_create(ascii.get())).get(), h5::Id(H5Tvlen_create(utf8.get())).get(),
                              where));
  }
  SUBCASE("an interned id is never handed out for the other character set") {
    h5::Interned types(h5::equal_types, 8);
    types.add(string_type(H5T_VARIABLE, H5T_CSET_UTF8));
    CHECK(types.find(ascii.get()).id == H5I_INVALID_HID);
    CHECK(types.find(utf8.get()).id != H5I_INVALID_HID);
  }
  CHECK(h5::same_type(H5T_NATIVE_INT32, H5T_NATIVE_INT32, where));
  CHECK_FALSE(h5::same_type(H5T_NATIVE_INT32, H5T_NATIVE_INT64, where));
}
