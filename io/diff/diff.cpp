#include "io/diff/diff.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "core/partition.hpp"
#include "core/selection.hpp"
#include "core/values.hpp"
#include "io/h5/attributes.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/links.hpp"
#include "io/h5/object.hpp"
#include "io/h5/space.hpp"
#include "io/h5/types.hpp"
#include "io/run/identity.hpp"
#include "io/source/input.hpp"

namespace mb::io::diff {
namespace {

// Thrown by Walk::add past the limit: the walk is over, the report is not complete.
struct LimitReached {};

// One side of the comparison: its open file, the name messages use, and the
// pairing of objects met so far (an object with several names, or a group
// reached again through a cycle of hard links, is compared once).
struct Side {
  Source source;
  h5::Id file;
  std::map<haddr_t, std::pair<haddr_t, std::string>> paired;  // address -> other side's address, first path
  h5::Location at(const std::string& path) const { return {source.shown(), path}; }
};

const char* kind_word(H5I_type_t kind) {
  switch (kind) {
    case H5I_GROUP: return "a group";
    case H5I_DATASET: return "a dataset";
    case H5I_DATATYPE: return "a named datatype";
    default: return "an object";
  }
}

const char* link_word(H5L_type_t type) {
  switch (type) {
    case H5L_TYPE_HARD: return "a hard link";
    case H5L_TYPE_SOFT: return "a soft link";
    case H5L_TYPE_EXTERNAL: return "an external link";
    default: return "a user-defined link";
  }
}

std::string shape_words(const h5::SpaceInfo& space) {
  return space.null_space ? "null" : fmt::format("[{}]", fmt::join(space.dims, ", "));
}

std::string max_dims_words(const std::vector<MaxDim>& dims) {
  std::vector<std::string> words;
  for (const MaxDim& d : dims) words.push_back(d ? std::to_string(*d) : "unlimited");
  return fmt::format("[{}]", fmt::join(words, ", "));
}

std::string layout_words(H5D_layout_t layout) {
  switch (layout) {
    case H5D_COMPACT: return "compact";
    case H5D_CONTIGUOUS: return "contiguous";
    case H5D_CHUNKED: return "chunked";
    case H5D_VIRTUAL: return "virtual";
    default: return "unknown";
  }
}

std::string filters_words(const h5::ChunkLayout& layout) {
  std::vector<std::string> words;
  for (const auto& [id, values] : layout.filters) words.push_back(fmt::format("{}({})", id, fmt::join(values, ",")));
  return words.empty() ? "none" : fmt::format("{}", fmt::join(words, " "));
}

// One dataset of each side, of equal datatypes and shapes, being compared:
// a buffer per side, which lives no longer than the datatype it reads into
// (a buffer of variable-length elements reclaims them through it).
struct Pair {
  std::string path;
  hid_t a, b;
  Shape dims;
  hid_t file_type;  // as A stores it (equal to B's)
  ValueType type;
  h5::Buffer in_a, in_b;
  std::uint64_t block_elements;  // per read, per side: the memory budget
};

class Walk {
 public:
  Walk(Side& a, Side& b, const Options& options, Report& report) : a_(a), b_(b), options_(options), report_(report) {}

  void group(const std::string& path, hid_t ga, hid_t gb);
  void object(const std::string& path, hid_t oa, hid_t ob);

 private:
  void add(const std::string& path, const char* what, std::string detail);
  bool first_meeting(const std::string& path, hid_t oa, hid_t ob);
  void member(const std::string& parent, hid_t ga, hid_t gb, const std::optional<h5::Link>& la,
              const std::optional<h5::Link>& lb);
  void attributes(const std::string& path, hid_t oa, hid_t ob);
  void attribute(const std::string& path, hid_t oa, hid_t ob, const std::string& name);
  void dataset(const std::string& path, hid_t da, hid_t db);
  void storage(const std::string& path, hid_t da, hid_t db);
  void values(const std::string& path, hid_t da, hid_t db, hid_t type, const Shape& dims);
  bool stored_alike(const Pair& pair);
  std::optional<std::string> chunks(Pair& pair);
  std::optional<std::string> region(Pair& pair, const Shape& offset, const Shape& count);
  std::optional<std::string> block(Pair& pair, const Selection& part);

  Side& a_;
  Side& b_;
  const Options& options_;
  Report& report_;
};

void Walk::add(const std::string& path, const char* what, std::string detail) {
  if (options_.limit != 0 && report_.findings.size() >= options_.limit) {
    report_.complete = false;
    throw LimitReached{};
  }
  report_.findings.push_back({path, what, std::move(detail)});
}

// False when this pair of objects was compared already under another name.
// An object met again paired with another object than the first time means
// that the two files name their objects differently (one object with two
// names in A, two objects in B), which is a difference of its own.
bool Walk::first_meeting(const std::string& path, hid_t oa, hid_t ob) {
  const h5::HardLinks la = h5::hard_links(oa, a_.at(path));
  const h5::HardLinks lb = h5::hard_links(ob, b_.at(path));
  if (la.count < 2 && lb.count < 2) return true;
  const auto seen_a = a_.paired.find(la.address);
  const auto seen_b = b_.paired.find(lb.address);
  if (seen_a == a_.paired.end() && seen_b == b_.paired.end()) {
    a_.paired.emplace(la.address, std::pair{lb.address, path});
    b_.paired.emplace(lb.address, std::pair{la.address, path});
    return true;
  }
  if (seen_a != a_.paired.end() && seen_b != b_.paired.end() && seen_a->second.first == lb.address) return false;
  const bool in_a = seen_a != a_.paired.end();
  const Side& named = in_a ? a_ : b_;
  const Side& other = in_a ? b_ : a_;
  add(path, "link", fmt::format("another name of {} in {}, not in {}", (in_a ? seen_a : seen_b)->second.second,
                                named.source.shown(), other.source.shown()));
  return false;
}

void Walk::object(const std::string& path, hid_t oa, hid_t ob) {
  const H5I_type_t ka = h5::kind_of(oa, a_.at(path));
  const H5I_type_t kb = h5::kind_of(ob, b_.at(path));
  if (ka != kb) {
    add(path, "kind", fmt::format("{} in {}, {} in {}", kind_word(ka), a_.source.shown(), kind_word(kb),
                                  b_.source.shown()));
    return;
  }
  if (!first_meeting(path, oa, ob)) return;
  ++report_.objects;
  attributes(path, oa, ob);
  if (ka == H5I_GROUP) {
    group(path, oa, ob);
  } else if (ka == H5I_DATASET) {
    dataset(path, oa, ob);
  } else if (ka == H5I_DATATYPE && !h5::same_type(oa, ob, a_.at(path))) {
    add(path, "dtype", fmt::format("dtype {} vs {}", h5::dtype_name(oa), h5::dtype_name(ob)));
  }
}

void Walk::group(const std::string& path, hid_t ga, hid_t gb) {
  std::map<std::string, std::pair<std::optional<h5::Link>, std::optional<h5::Link>>> members;
  for (h5::Link& l : h5::links_of(ga, a_.at(path))) members[l.name].first = std::move(l);
  for (h5::Link& l : h5::links_of(gb, b_.at(path))) members[l.name].second = std::move(l);
  for (const auto& [name, links] : members)
    member(path, ga, gb, links.first, links.second);
}

void Walk::member(const std::string& parent, hid_t ga, hid_t gb, const std::optional<h5::Link>& la,
                  const std::optional<h5::Link>& lb) {
  const std::string path = join_path(parent, (la ? la : lb)->name);
  if (!la || !lb) {
    add(path, "missing", fmt::format("only in {}", (la ? a_ : b_).source.shown()));
    return;
  }
  if (la->type != lb->type) {
    add(path, "link", fmt::format("{} in {}, {} in {}", link_word(la->type), a_.source.shown(),
                                  link_word(lb->type), b_.source.shown()));
    return;
  }
  if (la->type != H5L_TYPE_HARD) {  // a link's value is what it holds; where it leads is not compared
    const std::string ta = h5::link_target(ga, *la, a_.at(parent));
    const std::string tb = h5::link_target(gb, *lb, b_.at(parent));
    if (ta != tb) add(path, "link", fmt::format("{} to {} vs to {}", link_word(la->type), ta, tb));
    return;
  }
  const h5::Id oa = h5::open_object(ga, la->name, a_.at(path));
  const h5::Id ob = h5::open_object(gb, lb->name, b_.at(path));
  object(path, oa.get(), ob.get());
}

void Walk::attributes(const std::string& path, hid_t oa, hid_t ob) {
  std::map<std::string, int> names;  // 1: in A, 2: in B, 3: in both
  for (const std::string& n : h5::attribute_names(oa, a_.at(path))) names[n] |= 1;
  for (const std::string& n : h5::attribute_names(ob, b_.at(path))) names[n] |= 2;
  for (const auto& [name, sides] : names) {
    if (sides == 3)
      attribute(path, oa, ob, name);
    else
      add(path + "@" + name, "attribute", fmt::format("only in {}", (sides == 1 ? a_ : b_).source.shown()));
  }
}

void Walk::attribute(const std::string& path, hid_t oa, hid_t ob, const std::string& name) {
  const std::string at = path + "@" + name;
  const h5::AttributeValue va = h5::read_attribute(oa, name, a_.at(path));
  const h5::AttributeValue vb = h5::read_attribute(ob, name, b_.at(path));
  if (!h5::same_type(va.type.get(), vb.type.get(), a_.at(at))) {
    add(at, "dtype", fmt::format("dtype {} vs {}", h5::dtype_name(va.type.get()), h5::dtype_name(vb.type.get())));
  } else if (va.shape.null_space != vb.shape.null_space || va.shape.dims != vb.shape.dims) {
    add(at, "shape", fmt::format("shape {} vs {}", shape_words(va.shape), shape_words(vb.shape)));
  } else {
    const ValueType t = h5::value_type_of(va.type.get(), a_.at(at));
    const std::uint64_t n = va.shape.elements();
    if (auto i = first_difference(t, va.data.data(), vb.data.data(), n))
      add(at, "values", difference_text(t, va.shape.dims, {va.data.data(), vb.data.data(), n, 0, *i}));
  }
}

void Walk::dataset(const std::string& path, hid_t da, hid_t db) {
  const h5::Id ta = h5::type_of(da, a_.at(path));
  const h5::Id tb = h5::type_of(db, b_.at(path));
  const h5::SpaceInfo sa = h5::dataset_space(da, a_.at(path));
  const h5::SpaceInfo sb = h5::dataset_space(db, b_.at(path));
  if (options_.storage) storage(path, da, db);
  if (!h5::same_type(ta.get(), tb.get(), a_.at(path))) {
    add(path, "dtype", fmt::format("dtype {} vs {}", h5::dtype_name(ta.get()), h5::dtype_name(tb.get())));
  } else if (sa.null_space != sb.null_space || sa.dims != sb.dims) {
    add(path, "shape", fmt::format("shape {} vs {}", shape_words(sa), shape_words(sb)));
  } else if (sa.elements() != 0) {
    values(path, da, db, ta.get(), sa.dims);
  }
}

void Walk::storage(const std::string& path, hid_t da, hid_t db) {
  const h5::Id pa = h5::creation_of(da, a_.at(path));
  const h5::Id pb = h5::creation_of(db, b_.at(path));
  const H5D_layout_t la = h5::layout_of(pa.get(), a_.at(path));
  const H5D_layout_t lb = h5::layout_of(pb.get(), b_.at(path));
  const h5::ChunkLayout ca = h5::chunk_layout(da, a_.at(path));
  const h5::ChunkLayout cb = h5::chunk_layout(db, b_.at(path));
  const std::vector<MaxDim> ma = h5::dataset_space(da, a_.at(path)).max_dims;
  const std::vector<MaxDim> mb = h5::dataset_space(db, b_.at(path)).max_dims;
  if (la != lb) {
    add(path, "storage", fmt::format("layout {} vs {}", layout_words(la), layout_words(lb)));
  } else if (ca.chunk != cb.chunk) {
    add(path, "storage", fmt::format("chunks [{}] vs [{}]", fmt::join(ca.chunk, ", "), fmt::join(cb.chunk, ", ")));
  } else if (ca.filters != cb.filters) {
    add(path, "storage", fmt::format("filters {} vs {}", filters_words(ca), filters_words(cb)));
  } else if (ma != mb) {
    add(path, "storage", fmt::format("max dims {} vs {}", max_dims_words(ma), max_dims_words(mb)));
  }
}

// Both sides chunked alike (chunk shape and filters) in a datatype whose
// stored bytes mean the same in any file: equal stored chunks hold equal
// values, so most chunks need no decoding. A stored chunk is read whole:
// chunks larger than a block of the budget are compared by their values.
bool Walk::stored_alike(const Pair& pair) {
  if (!h5::copyable_as_bytes(pair.file_type)) return false;
  const h5::ChunkLayout ca = h5::chunk_layout(pair.a, a_.at(pair.path));
  return !ca.chunk.empty() && element_count(ca.chunk) <= pair.block_elements &&
         ca == h5::chunk_layout(pair.b, b_.at(pair.path));
}

void Walk::values(const std::string& path, hid_t da, hid_t db, hid_t type, const Shape& dims) {
  const std::size_t element = std::max<std::size_t>(h5::size_of(type, a_.at(path)), 1);
  Pair pair{path, da, db, dims, type, h5::value_type_of(type, a_.at(path)), h5::Buffer(type), h5::Buffer(type),
            std::max<std::uint64_t>(options_.buffer_bytes / 2 / element, 1)};
  report_.bytes += element_count(dims) * element;
  const auto found = stored_alike(pair) ? chunks(pair) : region(pair, Shape(dims.size(), 0), dims);
  if (found) add(path, "values", *found);
}

// The first difference in the box at `offset` of extent `count`, read a
// block at a time within the memory budget (a chunk may be larger than it).
std::optional<std::string> Walk::region(Pair& pair, const Shape& offset, const Shape& count) {
  std::optional<std::string> found;
  for_each_block(count, pair.block_elements, [&](const Shape& start, const Shape& extent) {
    if (found) return;
    Shape at = start;
    for (std::size_t i = 0; i < at.size(); ++i) at[i] += offset[i];
    found = block(pair, Selection::all(pair.dims).part(at, extent));
  });
  return found;
}

// The first difference, reading only the chunks whose stored bytes differ.
std::optional<std::string> Walk::chunks(Pair& pair) {
  const std::string& path = pair.path;
  const Shape& dims = pair.dims;
  const Shape chunk = h5::chunk_layout(pair.a, a_.at(path)).chunk;
  Shape grid(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) grid[i] = (dims[i] + chunk[i] - 1) / chunk[i];
  h5::RawChunk ra, rb;
  std::optional<std::string> found;
  // One "element" of the grid per chunk: for_each_block walks it in storage order.
  for_each_block(grid, 1, [&](const Shape& index, const Shape&) {
    if (found) return;
    Shape offset(dims.size()), count(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i) {
      offset[i] = index[i] * chunk[i];
      count[i] = std::min(chunk[i], dims[i] - offset[i]);
    }
    const std::vector<hsize_t> at(offset.begin(), offset.end());
    const bool wa = h5::read_chunk(pair.a, at.data(), ra, a_.at(path));
    const bool wb = h5::read_chunk(pair.b, at.data(), rb, b_.at(path));
    if (wa && wb && ra.filters == rb.filters && ra.bytes == rb.bytes) return;
    found = region(pair, offset, count);
  });
  return found;
}

// The values of one part of both datasets: nullopt when equal, else the first difference.
std::optional<std::string> Walk::block(Pair& pair, const Selection& part) {
  h5::read(pair.a, part, pair.in_a, a_.at(pair.path));
  h5::read(pair.b, part, pair.in_b, b_.at(pair.path));
  const ValueType& t = pair.type;
  const auto at = first_difference(t, pair.in_a.data(), pair.in_b.data(), part.elements());
  if (!at) return std::nullopt;
  // The index in the whole dataset of the part's element *at (row-major in the part).
  Shape index(part.count.size());
  std::uint64_t rest = *at;
  for (std::size_t i = part.count.size(); i-- > 0;) {
    index[i] = part.start[i] + rest % part.count[i];
    rest /= part.count[i];
  }
  const auto* a = static_cast<const unsigned char*>(pair.in_a.data()) + *at * t.size;
  const auto* b = static_cast<const unsigned char*>(pair.in_b.data()) + *at * t.size;
  if (pair.dims.empty()) return format_element(t, a) + " vs " + format_element(t, b);
  return fmt::format("at [{}]: {} vs {}", fmt::join(index, ", "), format_element(t, a), format_element(t, b));
}

// Both trees walked; the files closed (checked) before the verdict is given.
Report walk_both(const Source& a, const Source& b, const Options& options) {
  Side sa{a, source::open(a, h5::Cache::Keep), {}};
  Side sb{b, source::open(b, h5::Cache::Keep), {}};
  Report report;
  Walk walk(sa, sb, options, report);
  try {
    const h5::Id ra = h5::open_object(sa.file.get(), "/", sa.at("/"));
    const h5::Id rb = h5::open_object(sb.file.get(), "/", sb.at("/"));
    walk.object("/", ra.get(), rb.get());
  } catch (const LimitReached&) {
  }
  sa.file.close(sa.at("/"));
  sb.file.close(sb.at("/"));
  return report;
}

}  // namespace

Report compare(const Source& a, const Source& b, const Options& options) {
  // Recorded before the first byte is read and checked after the last: a
  // verdict, "the same" or a difference, is about one version of each file.
  run::watch_input(a);
  run::watch_input(b);
  Report report = walk_both(a, b, options);
  run::check_inputs_unchanged();
  return report;
}

}  // namespace mb::io::diff
