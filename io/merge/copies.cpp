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

#include <cerrno>
#include <cstring>

#include "core/clones.hpp"
#include "core/remote.hpp"
#include "io/guard.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/types.hpp"
#include "io/merge/steps.hpp"
#include "io/transfer/file_bytes.hpp"

namespace mb::io::merging {
namespace {

// The file at `path`, read at offsets.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) fail(std::strerror(errno));
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader() {
    if (fd_ >= 0) ::close(fd_);
  }
  std::uint64_t size() const { return size_; }
  void read(std::uint64_t at, std::size_t n, unsigned char* into) const {
    const std::int64_t got = transfer::read_at(fd_, into, n, at);
    if (got < 0) fail(std::strerror(errno));
    if (static_cast<std::size_t>(got) < n) fail("it ends early: truncated or replaced");
  }

 private:
  [[noreturn]] void fail(const char* why) const { throw Error(fmt::format("{}: cannot read ({})", path_, why)); }
  std::string path_;
  int fd_;
  std::uint64_t size_ = 0;
};

// Whether any input could be merged as a copy: only rows are cut (no
// offsets, derived values, reducers or CP twins), the inputs are local
// files, one process writes a real (not virtual) output.
bool copies_possible(const Context& ctx) {
  const MergeJob& job = ctx.job;
  if (!job.policy.clones || job.team || job.virtual_datasets || ctx.plan.grid.cp > 1) return false;
  for (const auto& input : job.inputs)
    if (is_remote(input.path)) return false;
  for (const auto& [path, rule] : ctx.resolution.datasets)
    if (rule.mode != LeafRule::Mode::Split && rule.mode != LeafRule::Mode::Replicate) return false;
  for (const auto& [key, rule] : ctx.resolution.attributes)
    if (rule.mode == LeafRule::Mode::Reduce) return false;
  return true;
}

// Whether the input's bytes equal the model's in every span of `same`,
// read a window at a time.
bool same_bytes(const Reader& model, const Reader& input, const std::vector<ByteSpan>& same) {
  constexpr std::uint64_t kWindow = 8u << 20;
  std::vector<unsigned char> a, b;
  for (const ByteSpan& span : same) {
    for (std::uint64_t at = span.begin; at < span.end(); at += kWindow) {
      throw_if_interrupted();
      const auto n = static_cast<std::size_t>(std::min(kWindow, span.end() - at));
      a.resize(n);
      b.resize(n);
      model.read(at, n, a.data());
      input.read(at, n, b.data());
      if (std::memcmp(a.data(), b.data(), n) != 0) return false;
    }
  }
  return true;
}

// Why input `ctx.input` is not merged as a copy of the model, or "".
std::string not_a_copy(const Context& ctx, const Reader& model, const Reader& input) {
  const Carried& c = ctx.carried;
  if (!c.copies) return "the model's split data is not all read whole from contiguous storage";
  for (const auto& [path, leaf] : ctx.plan.leaves)
    if (leaf.held[ctx.input] != leaf.held[0]) return path + " holds other rows than the model's";
  if (input.size() != model.size()) return "not the model's size";
  std::vector<ByteSpan> spans;
  for (const auto& [path, span] : c.model_data) spans.push_back(span);
  const auto rest = outside(spans, model.size());
  if (!rest) return "the model's data spans overlap";
  if (!same_bytes(model, input, *rest)) return "its bytes differ from the model's outside the split data";
  return "";
}

// The input's rows of `path`, read at the model's span, into the result
// assembled in memory.
void read_rows(const Context& ctx, const Reader& input, const std::string& path, const ByteSpan& span,
               std::vector<unsigned char>& piece) {
  const MergedLeaf& leaf = ctx.plan.leaves.at(path);
  h5::Buffer& whole = ctx.carried.assembled.at(path);
  const std::size_t element = h5::size_of(whole.type(), ctx.out_where(path));
  piece.resize(span.size);
  input.read(span.begin, span.size, piece.data());
  Shape dims = leaf.dims;
  dims[leaf.axis] = leaf.held[ctx.input];
  for (const auto& place : place_segments(leaf.maps[ctx.input], leaf.axis, leaf.dims, dims))
    copy_selected({piece.data(), dims}, place.piece, {static_cast<unsigned char*>(whole.data()), leaf.dims},
                  place.batch, element);
  count_bytes(ctx.job.policy.meter, span.size);
}

}  // namespace

void note_model_data(const Context& ctx, const DatasetPair& in, const h5::Buffer* whole) {
  Carried& c = ctx.carried;
  if (!c.copies) return;
  const h5::Location where = ctx.where(in.node.path);
  if (in.space.null_space) return;
  h5::Id dcpl(H5Dget_create_plist(in.object), where, "cannot read the creation properties");
  const std::uint64_t bytes = in.space.elements() * h5::size_of(in.model.type, where);
  const haddr_t at = bytes == 0 ? 0 : H5Dget_offset(in.object);
  if (!whole || at == HADDR_UNDEF || h5::layout_of(dcpl.get(), where) != H5D_CONTIGUOUS ||
      h5::check(H5Pget_external_count(dcpl.get()), where, "cannot read external files") != 0 ||
      !h5::copyable_as_bytes(in.model.type) || (bytes != 0 && H5Dget_storage_size(in.object) != bytes)) {
    h5::forget_error();
    c.copies = false;
    return;
  }
  c.model_data[in.node.path] = {at, bytes};
}

bool merge_copy(const Context& ctx, hid_t output) {
  if (ctx.first() || !copies_possible(ctx)) return false;
  const Reader model(ctx.job.inputs[0].path), input(ctx.file());
  if (const std::string why = not_a_copy(ctx, model, input); !why.empty()) {
    spdlog::debug("{}: merged through libhdf5: {}", ctx.job.inputs[ctx.input].label, why);
    return false;
  }
  std::vector<unsigned char> piece;
  for (const auto& [path, span] : ctx.carried.model_data) {
    throw_if_interrupted();
    note_activity(ctx.file(), path);
    read_rows(ctx, input, path, span, piece);
  }
  if (ctx.last()) {
    // The assembled results, as the walk writes them at the last input.
    std::vector<std::string> paths;
    for (const auto& [path, whole] : ctx.carried.assembled) paths.push_back(path);
    for (const auto& path : paths) {
      const h5::Id dst = h5::open_object(output, path, ctx.out_where(path));
      write_assembled(ctx, path, ctx.plan.leaves.at(path), dst.get());
    }
  }
  spdlog::debug("{}: merged as a copy of the model", ctx.job.inputs[ctx.input].label);
  return true;
}

}  // namespace mb::io::merging
