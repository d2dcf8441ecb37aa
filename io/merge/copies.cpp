// Inputs that are copies of the model. A split writes the files of one
// shape as copies of one file with their own data written over it
// (io/split/clone.hpp), so such an input is the model's bytes but inside
// its split datasets' data. Compared byte for byte with the model outside
// that data, it needs no walk: its structure, attributes and replicated
// data are the model's bytes (what the walk would find equal), and its rows
// are read as file bytes where the model holds its own.
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/clones.hpp"
#include "io/run/fd.hpp"
#include "io/run/guard.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/merge/concat.hpp"
#include "io/merge/copies.hpp"
#include "io/merge/state.hpp"
#include "io/source/input.hpp"

namespace mb::io::merge {
namespace {

// The file at `path`, read at offsets.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), fd_(run::open_fd(path, O_RDONLY | O_CLOEXEC)) {
    struct stat st {};
    if (!fd_.valid() || ::fstat(fd_.get(), &st) != 0) fail(std::strerror(errno));
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  std::uint64_t size() const { return size_; }
  void read(std::uint64_t at, std::size_t n, unsigned char* into) const {
    const std::int64_t got = h5::read_at(fd_.get(), into, n, at);
    if (got < 0) fail(std::strerror(errno));
    if (static_cast<std::size_t>(got) < n) fail("it ends early: truncated or replaced");
  }

 private:
  [[noreturn]] void fail(const char* why) const { throw Error(fmt::format("{}: cannot read ({})", path_, why)); }
  std::string path_;
  run::Fd fd_;
  std::uint64_t size_ = 0;
};

}  // namespace

// Where the model holds each split dataset's data, in file order, and its
// bytes outside them (none when spans overlap): what every later input is
// compared against, laid out once.
struct ModelLayout {
  struct Data {
    ByteSpan span;
    const std::string* path;
    const MergedLeaf* leaf;
    h5::Buffer* whole;  // its result assembled in memory
    std::size_t element;
  };
  std::uint64_t size = 0;
  std::vector<Data> data;
  std::optional<std::vector<ByteSpan>> rest;
};

namespace {

// A file read through a window that moves forward: bytes asked for at
// rising offsets cost one read per window, not one per span (20,000 small
// datasets leave 20,000 spans of metadata between their data).
class Window {
 public:
  static constexpr std::uint64_t kBytes = 8u << 20;
  explicit Window(const Reader& file) : file_(file) {}
  // The `n` bytes at `at`, valid until the next call.
  const unsigned char* bytes(std::uint64_t at, std::size_t n) {
    if (at < begin_ || at + n > begin_ + held_.size()) {
      begin_ = at;
      held_.resize(std::max<std::uint64_t>(n, std::min(kBytes, file_.size() - std::min(at, file_.size()))));
      file_.read(at, held_.size(), held_.data());
    }
    return held_.data() + (at - begin_);
  }

 private:
  const Reader& file_;
  std::uint64_t begin_ = 0;
  std::vector<unsigned char> held_;
};

// Whether the input's bytes equal the model's in every span of `same` (in
// order), both read a window at a time.
bool same_bytes(const Reader& model, const Reader& input, const std::vector<ByteSpan>& same) {
  Window a(model), b(input);
  for (const ByteSpan& span : same) {
    for (std::uint64_t at = span.begin; at < span.end(); at += Window::kBytes) {
      run::throw_if_interrupted();
      const auto n = static_cast<std::size_t>(std::min(Window::kBytes, span.end() - at));
      if (std::memcmp(a.bytes(at, n), b.bytes(at, n), n) != 0) return false;
    }
  }
  return true;
}

// Why input `ctx.input` is not merged as a copy of the model, or "".
std::string not_a_copy(const Context& ctx, const CopyState& copies, const Reader& model_file, const Reader& input) {
  const ModelLayout& model = *copies.layout;
  if (!copies.copies) return "the model's split data is not all read whole from contiguous storage";
  for (const auto& [path, leaf] : ctx.plan.leaves)
    if (leaf.held[ctx.input] != leaf.held[0]) return path + " holds other rows than the model's";
  if (input.size() != model.size) return "not the model's size";
  if (!model.rest) return "the model's data spans overlap";
  if (!same_bytes(model_file, input, *model.rest)) return "its bytes differ from the model's outside the split data";
  return "";
}

// The input's rows of one split dataset, the model's span of its bytes
// (`bytes`), into the result assembled in memory.
void read_rows(const Context& ctx, const ModelLayout::Data& data, const unsigned char* bytes) {
  const MergedLeaf& leaf = *data.leaf;
  Shape dims = leaf.dims;
  dims[leaf.axis] = leaf.held[ctx.input];
  for (const auto& place : place_segments(leaf.maps[ctx.input], leaf.axis, leaf.dims, dims))
    copy_selected({bytes, dims}, place.piece, {static_cast<unsigned char*>(data.whole->data()), leaf.dims},
                  place.batch, data.element);
  run::count_bytes(ctx.job.policy.meter, data.span.size);
}

// Every split dataset's rows of the input, read in the order of their
// data in the file.
void read_all_rows(const Context& ctx, const ModelLayout& model, const Reader& input) {
  Window window(input);
  for (const auto& data : model.data) {
    run::throw_if_interrupted();
    run::note_activity(ctx.file(), *data.path);
    read_rows(ctx, data, window.bytes(data.span.begin, data.span.size));
  }
}

// The model's layout, from what input 0 noted.
std::shared_ptr<const ModelLayout> lay_out(const Context& ctx, const CopyState& noted, ConcatState& concat,
                                           std::uint64_t size) {
  auto model = std::make_shared<ModelLayout>();
  model->size = size;
  std::vector<ByteSpan> spans;
  for (const auto& [path, span] : noted.model_data) {
    h5::Buffer& whole = concat.assembled.at(path);
    const std::size_t element = h5::size_of(whole.type(), ctx.out_where(path));
    model->data.push_back({span, &path, &ctx.plan.leaves.at(path), &whole, element});
    spans.push_back(span);
  }
  std::sort(model->data.begin(), model->data.end(),
            [](const auto& a, const auto& b) { return a.span.begin < b.span.begin; });
  model->rest = outside(std::move(spans), size);
  return model;
}

// Where the model holds the data of `in`, when it is one run of bytes read
// whole, which mean the same in any file.
std::optional<ByteSpan> model_span(const DatasetPair& in, const h5::Location& where) {
  if (!h5::copyable_as_bytes(in.model.type)) return std::nullopt;
  const std::uint64_t bytes = in.space.elements() * h5::size_of(in.model.type, where);
  if (bytes == 0) {  // no data, so no address: stored as the others are is enough
    if (!h5::contiguous_in_file(h5::creation_of(in.object, where).get(), where)) return std::nullopt;
    return ByteSpan{0, 0};
  }
  const std::optional<h5::Placement> placement = h5::placement(in.object, where);
  if (!placement || placement->bytes != bytes) return std::nullopt;
  return ByteSpan{placement->address, bytes};
}

}  // namespace

// Whether any input could be merged as a copy: only rows are cut (no
// offsets, derived values, reducers or CP twins), the inputs are local
// files, one process writes a real (not virtual) output.
bool copies_possible(const Context& ctx) {
  const MergeJob& job = ctx.job;
  if (!job.policy.clones || job.team || job.virtual_datasets || ctx.plan.grid.cp > 1) return false;
  for (const auto& input : job.inputs)
    if (!source::local_path(input.source)) return false;
  for (const auto& [path, rule] : ctx.resolution.datasets)
    if (rule.mode != LeafRule::Mode::Split && rule.mode != LeafRule::Mode::Replicate) return false;
  for (const auto& [key, rule] : ctx.resolution.attributes)
    if (rule.mode == LeafRule::Mode::Reduce) return false;
  return true;
}

void note_model_data(const Context& ctx, CopyState& state, const DatasetPair& in, const h5::Buffer* whole) {
  if (!state.possible || !state.copies) return;
  const h5::Location where = ctx.where(in.node.path);
  if (in.space.null_space) return;
  const std::optional<ByteSpan> span = whole ? model_span(in, where) : std::nullopt;
  if (!span) {
    state.copies = false;
    return;
  }
  state.model_data[in.node.path] = *span;
}

bool merge_copy(const Context& ctx, MergeState& state, hid_t output) {
  CopyState& copies = state.copies;
  if (ctx.first() || !copies.possible) return false;
  const Reader model(ctx.job.inputs[0].source.name()), input(ctx.verified_source().name());
  if (!copies.layout) copies.layout = lay_out(ctx, copies, state.concat, model.size());
  if (const std::string why = not_a_copy(ctx, copies, model, input); !why.empty()) {
    spdlog::debug("{}: merged through libhdf5: {}", ctx.job.inputs[ctx.input].label, why);
    return false;
  }
  read_all_rows(ctx, *copies.layout, input);
  if (ctx.last()) {
    // The assembled results, as the walk writes them at the last input.
    std::vector<std::string> paths;
    for (const auto& [path, whole] : state.concat.assembled) paths.push_back(path);
    for (const auto& path : paths) {
      const h5::Id dst = placed(state.concat, path) ? h5::Id() : h5::open_object(output, path, ctx.out_where(path));
      write_assembled(ctx, state, path, ctx.plan.leaves.at(path), dst.get());
    }
  }
  spdlog::debug("{}: merged as a copy of the model", ctx.job.inputs[ctx.input].label);
  return true;
}

}  // namespace mb::io::merge
