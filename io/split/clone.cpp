#include "io/split/clone.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "core/selection.hpp"
#include "io/run/fd.hpp"
#include "io/run/guard.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/transfer/file_bytes.hpp"

namespace mb::io::split {
namespace {

std::uint64_t piece_bytes(const PatchedDataset& d, const SplitPlan& plan, std::uint64_t file) {
  return element_count(piece_shape(d, plan, file)) * d.node->element_size;
}

// Where the model's copy of `d` starts in its file, or why its data
// cannot be written over.
struct Patchable {
  std::uint64_t offset = 0;  // 0 for a copy that holds no element
  std::string refused;       // "" when it can be
};

Patchable patchable(const ModelNotes::Written& w, const PatchedDataset& d, std::uint64_t bytes) {
  if (!d.node->storage.filters.empty() || element_count(d.node->shape) * d.node->element_size > transfer::kWholeInMemory)
    return {0, "its input is filtered or larger than is read whole"};
  if (!h5::contiguous_in_file(w.dcpl, w.where)) return {0, "not contiguous in the file"};
  if (!h5::copyable_as_bytes(w.type)) return {0, "its datatype does not hold its values in place"};
  if (bytes == 0) return {};
  // None: not allocated, so nothing of it is stored.
  const std::optional<h5::Placement> placed = h5::placement(w.dst, w.dcpl, w.where);
  if (!placed || placed->bytes != bytes) return {0, "its stored size is not its elements'"};
  return {placed->address, ""};
}

run::Fd open_or_throw(const std::string& path, int flags, const std::string& shown) {
  run::Fd fd = run::open_fd(path, flags, 0666);
  if (!fd.valid()) throw Error(fmt::format("{}: cannot open ({})", shown, std::strerror(errno)));
  return fd;
}

// A copy's close reports what writing it could not (NFS, a full disk).
void close_written(run::Fd& fd, const std::string& shown) {
  if (!fd.close()) throw Error(fmt::format("{}: cannot write ({})", shown, std::strerror(errno)));
}

// A new file at `target.temp` holding the model's bytes.
run::Fd copy_model(const CopyTarget& target, std::size_t step) {
  const h5::Location from{target.shown + " (its model)", ""}, to{target.shown, ""};
  const run::Fd model = open_or_throw(target.model, O_RDONLY | O_CLOEXEC, from.file);
  struct stat st {};
  if (::fstat(model.get(), &st) != 0) throw Error(fmt::format("{}: cannot read ({})", from.file, std::strerror(errno)));
  // O_EXCL | O_NOFOLLOW: never write through something planted under the temporary name.
  run::Fd out = open_or_throw(target.temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, to.file);
  transfer::copy_range({{model.get(), 0}, 0, from, {out.get(), 0}, 0, to, static_cast<std::uint64_t>(st.st_size)}, step,
                       nullptr);
  return out;
}

// A patched dataset and its input elements as stored.
struct Patch {
  const PatchedDataset& d;
  std::size_t index;  // in the clone plan
  const unsigned char* elements;
};

// Writes the patch's piece of every target over its model's.
void patch(const SplitSource& source, const Patch& p, const std::vector<CopyTarget>& targets,
           const std::vector<run::Fd>& fds) {
  const PatchedDataset& d = p.d;
  const std::size_t element = d.node->element_size;
  std::vector<unsigned char> piece;
  for (std::size_t t = 0; t < targets.size(); ++t) {
    const Shape dims = piece_shape(d, source.plan, targets[t].file);
    piece.assign(element_count(dims) * element, 0);
    if (piece.empty()) continue;
    auto places = place_segments(source.plan.pieces.at(d.node->path).at(targets[t].file), d.axis, d.node->shape, dims);
    if (d.sequence_axis)
      places = place_positions(places, source.plan.positions.at(d.node->path).at(targets[t].file), *d.sequence_axis);
    for (const auto& place : places)
      copy_selected({p.elements, d.node->shape}, place.batch, {piece.data(), dims}, place.piece, element);
    h5::write_bytes(fds[t].get(), piece.data(), piece.size(), (*targets[t].offsets)[p.index],
                          {targets[t].shown, d.node->path});
    run::count_bytes(source.policy.meter, piece.size());
  }
}

// The input's elements of `d` as stored (in its own datatype: no conversion).
void read_elements(const SplitSource& source, const PatchedDataset& d, std::vector<unsigned char>& out) {
  const h5::Location where{source.name, d.node->path};
  h5::Id ds = h5::open_object(source.file, d.node->path, where);
  const h5::Id type = h5::type_of(ds.get(), where);
  h5::Buffer whole(type.get());
  h5::read(ds.get(), Selection::all(d.node->shape), whole, where);
  const auto* from = static_cast<const unsigned char*>(whole.data());
  out.assign(from, from + whole.elements() * d.node->element_size);
}

}  // namespace

ModelNotes::ModelNotes(const ClonePlan& clones, const SplitPlan& plan, std::uint64_t budget)
    : clones_(clones), plan_(plan), budget_(budget), elements_(clones.patched.size()), kept_(clones.patched.size()) {
  for (std::size_t j = 0; j < clones.patched.size(); ++j) index_[clones.patched[j].node->path] = j;
  for (const auto& c : clones.classes)
    if (!c.copies.empty())
      models_[c.model] = {DataOffsets(clones.patched.size()), std::vector<bool>(clones.patched.size()), ""};
}

void ModelNotes::written(const Written& w) {
  const std::uint64_t file = w.file;
  const NodeInfo& ds = w.ds;
  const h5::Buffer* whole = w.whole;
  const auto model = models_.find(file);
  const auto index = index_.find(ds.path);
  if (model == models_.end() || index == index_.end()) return;
  const std::size_t j = index->second;
  const PatchedDataset& d = clones_.patched[j];
  Model& m = model->second;
  m.seen[j] = true;
  if (!m.refused.empty()) return;
  const Patchable p = patchable(w, d, piece_bytes(d, plan_, file));
  if (!p.refused.empty()) {
    m.refused = ds.path + ": " + p.refused;
    return;
  }
  m.offsets[j] = p.offset;
  const std::uint64_t size = whole ? whole->elements() * d.node->element_size : 0;
  if (whole && !kept_[j] && size <= budget_) {
    const auto* from = static_cast<const unsigned char*>(whole->data());
    elements_[j].assign(from, from + size);
    kept_[j] = true;
    budget_ -= size;
  }
}

std::optional<DataOffsets> ModelNotes::offsets(std::uint64_t file, const std::string& shown) const {
  const Model& m = models_.at(file);
  std::string why = m.refused;
  for (std::size_t j = 0; why.empty() && j < m.seen.size(); ++j)
    if (!m.seen[j]) why = clones_.patched[j].node->path + ": not written";  // cannot be: every dataset is
  if (why.empty()) return m.offsets;
  spdlog::debug("{}: {}; the files of its shapes are written through libhdf5", shown, why);
  return std::nullopt;
}

const std::vector<unsigned char>* ModelNotes::elements(std::size_t index) const {
  return kept_[index] ? &elements_[index] : nullptr;
}

void write_copies(const SplitSource& source, const ModelNotes& notes, const std::vector<CopyTarget>& targets) {
  const ClonePlan& clones = notes.clones();
  std::vector<run::Fd> fds;
  for (const auto& target : targets) {
    run::throw_if_interrupted();
    fds.push_back(copy_model(target, source.policy.buffer_bytes));
    // What the model's bytes brought: every dataset but the patched ones, as split_bytes counts them.
    std::uint64_t patched = 0;
    for (const auto& d : clones.patched) patched += piece_bytes(d, source.plan, target.file);
    run::count_bytes(source.policy.meter,
                split_bytes(source.tree, source.resolution, source.plan, {target.file, target.file + 1}) - patched);
  }
  std::vector<unsigned char> read;  // a patched dataset's elements that were not kept
  for (std::size_t j = 0; j < clones.patched.size(); ++j) {
    const PatchedDataset& d = clones.patched[j];
    run::throw_if_interrupted();
    run::note_activity(source.name, d.node->path);
    const std::vector<unsigned char>* elements = notes.elements(j);
    if (!elements) {
      read_elements(source, d, read);
      elements = &read;
    }
    patch(source, {d, j, elements->data()}, targets, fds);
  }
  for (std::size_t t = 0; t < targets.size(); ++t) close_written(fds[t], targets[t].shown);
}

}  // namespace mb::io::split
