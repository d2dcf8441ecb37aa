#include "io/split/writer.hpp"

#include <optional>

#include "core/selection.hpp"
#include "io/tree/derived.hpp"
#include "io/run/guard.hpp"
#include "io/split/clone.hpp"
#include "io/tree/held.hpp"
#include "io/h5/attributes.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/h5/object.hpp"
#include "io/h5/scales.hpp"
#include "io/h5/types.hpp"
#include "io/transfer/copy.hpp"
#include "io/transfer/gather.hpp"
#include "io/tree/offsets.hpp"
#include "io/tree/reader.hpp"

namespace mb::io::split {
namespace {

using transfer::Side;

// The attributes' names as the tree read them (in name order): the writer
// reads the same attributes of the same file without listing them again.
std::vector<std::string> attribute_names(const std::vector<AttributeInfo>& attributes) {
  std::vector<std::string> names;
  names.reserve(attributes.size());
  for (const auto& a : attributes) names.push_back(a.name);
  return names;
}

class SplitWriter {
 public:
  SplitWriter(const SplitSource& source, const std::vector<std::uint64_t>& files, const std::vector<std::string>& names)
      : source_(source), files_(files), names_(names) {}

  void write(const std::vector<h5::Id>& outputs) {
    std::vector<hid_t> roots;
    for (const auto& f : outputs) roots.push_back(f.get());
    const h5::Location where{source_.name, "/"};
    const h5::Id root = h5::open_object(source_.file, "/", where);
    const h5::Attributes attributes = h5::read_attributes(root.get(), where);
    for (std::size_t i = 0; i < roots.size(); ++i) h5::write_attributes(roots[i], attributes, out_where(i, "/"));
    write_children(source_.tree, root.get(), roots);
    // Once every scale and dataset exists: dimension scales attached again.
    for (std::size_t i = 0; i < roots.size(); ++i) h5::attach_scales(roots[i], names_[i], source_.tree);
    // Last, once every output holds its offsets: each derived value is
    // computed from its own file's offsets.
    const std::vector<tree::DerivedTarget> derived = tree::derived_targets(source_.tree, source_.resolution);
    if (!derived.empty())
      for (std::size_t i = 0; i < roots.size(); ++i) tree::write_derived_values(roots[i], names_[i], derived);
  }

 private:
  h5::Location out_where(std::size_t i, const std::string& path) const { return {names_[i], path}; }

  void write_children(const NodeInfo& group, hid_t src_group, const std::vector<hid_t>& dst_groups) {
    for (const auto& child : group.children) {
      run::throw_if_interrupted();
      if (child.is_further_name()) {  // the object is written under its first name, met before
        for (std::size_t i = 0; i < dst_groups.size(); ++i)
          h5::create_hard_link(dst_groups[i], child.name, child.first_name, out_where(i, child.path));
        continue;
      }
      if (tree::Held::Dataset* held = held_dataset(child)) {
        write_copies(child, {held->prototype, held->attributes, &held->whole, H5I_INVALID_HID}, dst_groups);
        continue;
      }
      h5::Id src = h5::open_object(src_group, child.name, {source_.name, child.path});
      if (child.is_group()) {
        write_group(child, src.get(), dst_groups);
      } else {
        write_dataset(child, src.get(), dst_groups);
      }
    }
  }

  void write_group(const NodeInfo& group, hid_t src, const std::vector<hid_t>& dst_parents) {
    const h5::Attributes attributes = h5::read_attributes(src, {source_.name, group.path}, attribute_names(group.attributes));
    std::vector<h5::Id> created;
    std::vector<hid_t> dst;
    for (std::size_t i = 0; i < dst_parents.size(); ++i) {
      const auto where = out_where(i, group.path);
      created.push_back(h5::create_group(dst_parents[i], group.name, group.has_large_attribute(), where));
      h5::write_attributes(created.back().get(), attributes, where);
      dst.push_back(created.back().get());
    }
    write_children(group, src, dst);
  }

  // Small unfiltered data is read once for all the outputs, so that the tens
  // of thousands of small datasets of a real batch cost few library calls
  // each. Offsets are rebased per output instead.
  std::optional<h5::Buffer> read_whole(const NodeInfo& ds, hid_t src, const h5::Prototype& prototype,
                                       const LeafRule& rule, const h5::Location& where) const {
    const std::uint64_t bytes = element_count(ds.shape) * h5::size_of(prototype.type.get(), where);
    if (ds.null_space || rule.mode == LeafRule::Mode::Offsets || !transfer::held_whole(prototype.dcpl.get(), bytes, where))
      return std::nullopt;
    std::optional<h5::Buffer> whole(std::in_place, prototype.type.get());
    h5::read(src, Selection::all(ds.shape), *whole, where);
    return whole;
  }

  // A dataset kept from the tree's walk, if its rule needs nothing more of
  // the input (offsets are read again, to be rebased).
  tree::Held::Dataset* held_dataset(const NodeInfo& ds) const {
    if (source_.held == nullptr || ds.is_group()) return nullptr;
    if (source_.resolution.dataset_rule(ds.path).mode == LeafRule::Mode::Offsets) return nullptr;
    return source_.held->find(ds.path);
  }

  // What the copies of one dataset are made from, read from the input once.
  struct Input {
    const h5::Prototype& prototype;
    const h5::Attributes& attributes;
    h5::Buffer* whole;  // all its data, when small; else read from `src`
    hid_t src;          // invalid for a kept dataset, which is whole
  };

  // Reads its prototype, its attributes and, when small, its data.
  void write_dataset(const NodeInfo& ds, hid_t src, const std::vector<hid_t>& dst_parents) {
    const h5::Location src_where{source_.name, ds.path};
    const LeafRule& rule = source_.resolution.dataset_rule(ds.path);
    const h5::Prototype prototype = h5::read_prototype(src, src_where);
    const h5::Attributes attributes = h5::read_attributes(src, src_where, attribute_names(ds.attributes));
    std::optional<h5::Buffer> whole = read_whole(ds, src, prototype, rule, src_where);
    write_copies(ds, {prototype, attributes, whole ? &*whole : nullptr, src}, dst_parents);
  }

  void write_copies(const NodeInfo& ds, const Input& in, const std::vector<hid_t>& dst_parents) {
    const h5::Location src_where{source_.name, ds.path};
    const LeafRule& rule = source_.resolution.dataset_rule(ds.path);
    const Side from = in.whole ? Side::in_memory(*in.whole, ds.shape, src_where) : Side::of(in.src, src_where);
    std::optional<h5::Extent> extent;  // shared by the copies of one extent
    run::ByteMeter* meter = source_.policy.meter;
    const std::vector<unsigned char> pad = pad_of(ds.path, in.prototype.type.get(), rule, src_where);
    for (std::size_t i = 0; i < dst_parents.size(); ++i) {
      const auto where = out_where(i, ds.path);
      const RowMap* rows = rule.cuts_rows() ? &source_.plan.pieces.at(ds.path).at(files_[i]) : nullptr;
      const RowMap* positions = sequence_positions(ds.path, files_[i]);
      const FileRows* padded = padded_rows(ds.path, files_[i]);
      Shape dims = ds.shape;
      if (rows) dims[static_cast<std::size_t>(rule.axis)] = padded ? padded->length : rows_in(*rows);
      if (positions) dims[static_cast<std::size_t>(*rule.sequence_axis)] = rows_in(*positions);
      if (meter) meter->begin(ds.null_space ? 0 : element_count(dims) * ds.element_size);  // as split_bytes counts it
      if (!extent || extent->dims != dims)
        extent = h5::make_extent(in.prototype, dims, {transfer::kFileBytesMin}, where);
      h5::Id dst = h5::with_newer_object_header(dst_parents[i], ds.has_large_attribute(), where, [&] {
        return h5::create_dataset(in.prototype, *extent, dst_parents[i], ds.name, where);
      });
      h5::write_attributes(dst.get(), in.attributes, where);
      const Side to = Side::of(dst.get(), where);
      if (rule.mode == LeafRule::Mode::Derive) continue;  // written last, from this file's offsets
      if (!rows) {
        transfer::copy(from, Selection::all(ds.shape), to, Selection::all(ds.shape), source_.policy);
      } else if (rule.mode == LeafRule::Mode::Offsets) {
        write_offsets({in.src, src_where, *rows, files_[i]}, {in.prototype, dst.get(), dst_parents[i], ds.name}, where);
      } else if (padded) {
        const auto axis = static_cast<std::size_t>(rule.axis);
        transfer::copy_gathered(from, to, {*rows, axis, false, &padded->rows}, source_.policy);
        transfer::fill_rows(to, complement(padded->rows, padded->length), axis, pad, source_.policy);
      } else if (per_document(rule) && transfer::gathers(*rows)) {
        transfer::copy_gathered(from, to, {*rows, static_cast<std::size_t>(rule.axis), false}, source_.policy);
      } else {
        auto places = place_segments(*rows, static_cast<std::size_t>(rule.axis), ds.shape, dims);
        if (positions) places = place_positions(places, *positions, static_cast<std::size_t>(*rule.sequence_axis));
        for (const auto& place : places) transfer::copy(from, place.batch, to, place.piece, source_.policy);
      }
      if (source_.notes)
        source_.notes->written({files_[i], ds, dst.get(), in.prototype.type.get(), extent->dcpl.get(), in.whole, where});
      if (meter) meter->end();
    }
  }

  // Packed data under CP: two short chunks of every document, moved in
  // windows (other row maps keep copy()'s byte paths, segment by segment).
  bool per_document(const LeafRule& rule) const {
    return rule.mode == LeafRule::Mode::Packed && source_.plan.cp > 1;
  }

  // Positions along the sequence axis of a dataset in file `file` (CP).
  const RowMap* sequence_positions(const std::string& path, std::uint64_t file) const {
    const auto it = source_.plan.positions.find(path);
    return it == source_.plan.positions.end() ? nullptr : &it->second.at(file);
  }

  // --cp-pad: where the rows of a packed dataset sit in file `file`.
  const FileRows* padded_rows(const std::string& path, std::uint64_t file) const {
    const auto it = source_.plan.padded.find(path);
    return it == source_.plan.padded.end() ? nullptr : &it->second.at(file);
  }

  // --cp-pad: the element a packed dataset's pads hold (its spec's "pad", else 0 or False), checked to fit its type.
  std::vector<unsigned char> pad_of(const std::string& path, hid_t type, const LeafRule& rule,
                                    const h5::Location& where) const {
    if (!source_.plan.padded.count(path)) return {};
    return h5::pad_element(type, rule.pad, where);
  }

  // The offsets rows of one file (offsets_rows) and which file it is.
  struct OffsetsPiece {
    hid_t src;
    const h5::Location& src_where;
    const RowMap& rows;
    std::uint64_t file;
  };
  // The offsets dataset written, and where its twins go (--cp-pad's padded
  // offsets, a default-layout DP file's ranks' bounds).
  struct OffsetsTarget {
    const h5::Prototype& prototype;
    hid_t dataset;
    hid_t parent;
    const std::string& name;
  };

  // A file's offsets are the lengths of its sequences, one after the other
  // from 0 (its cells' rows of the input's offsets, each segment read with
  // the row before it but the first: core/packed.hpp) or, under CP, each
  // CP rank's share of them: L/C tokens (the plan checked that 2C divides
  // every document), or with --cp-pad the rank's real tokens, and beside
  // them the padded documents' shares. Offsets are S+1 integers: small
  // enough to hold whole. They are read as 64-bit integers of their own
  // signedness, which hold every value exactly; the plan checked that they
  // start at 0 and rise, so the rebased values are non-negative and no
  // larger than the input's; padded ones are checked to fit.
  void write_offsets(const OffsetsPiece& piece, const OffsetsTarget& target, const h5::Location& where) const {
    const h5::Id type = h5::type_of(piece.src, piece.src_where);
    const hid_t memory = tree::offsets_memory_type(type.get(), piece.src_where);
    std::vector<Offsets> segments;
    for (std::size_t k = 0; k < piece.rows.size(); ++k) {
      const Segment& seg = piece.rows[k];
      const Segment read = k == 0 ? seg : Segment{seg.begin - 1, seg.count + 1, 1};
      h5::Buffer values(memory);
      h5::read(piece.src, Selection::rows({read.stop()}, 0, read), values, piece.src_where);
      // Two's complement: the values, checked non-negative, read the same as unsigned.
      const auto* v = static_cast<const std::uint64_t*>(values.data());
      segments.emplace_back(v, v + read.count);
    }
    const SplitPlan& plan = source_.plan;
    const std::uint64_t cp = plan.cp, rank = plan.grid().cp_rank_of(piece.file);
    std::vector<std::uint64_t> lengths = file_lengths(segments), padded;
    for (auto& length : lengths) {
      if (plan.cp_pad) padded.push_back(padded_length(length, cp) / cp);
      length = plan.cp_pad ? real_share(length, cp, rank) : length / cp;
    }
    const Offsets out = offsets_of(lengths);
    h5::write(target.dataset, Selection::all({out.size()}), memory, out.data(), where);
    if (plan.cp_pad)
      write_twin(target, padded_offsets_name, offsets_of(padded), {type.get(), memory, where}, "padded, the offsets");
    const auto& sequences = plan.sequences;
    if (plan.layout == FileLayout::PerMicrobatch && sequences && sequences->ranks > 1)
      write_twin(target, rank_bounds_name,
                 rank_bounds(sequences->runs, sequences->ranks, plan.grid().microbatch_of(piece.file)),
                 {type.get(), memory, where}, "the data-parallel ranks' bounds");
  }

  // The offsets' type in the file and in memory, and where they are.
  struct OffsetsType {
    hid_t file_type;
    hid_t memory;
    const h5::Location& where;
  };

  // Writes `values` beside the offsets dataset, named `named(its name)`, as
  // the offsets are stored (their type and creation properties): the
  // padded offsets of --cp-pad, a default-layout DP file's ranks' bounds.
  void write_twin(const OffsetsTarget& target, std::string (*named)(const std::string&), const Offsets& values,
                  const OffsetsType& as, const char* what) const {
    const h5::Location at{as.where.file, named(as.where.path)};
    if (values.back() > tree::largest_offset(as.file_type, as.where))
      throw Error(fmt::format("{}: {} reach {}, more than {} holds", at.describe(), what, values.back(),
                              h5::dtype_name(as.file_type)));
    const h5::Extent extent = h5::make_extent(target.prototype, {values.size()}, {transfer::kFileBytesMin}, at);
    const h5::Id twin = h5::create_dataset(target.prototype, extent, target.parent, named(target.name), at);
    h5::write(twin.get(), Selection::all({values.size()}), as.memory, values.data(), at);
  }

  const SplitSource& source_;
  const std::vector<std::uint64_t>& files_;
  const std::vector<std::string>& names_;
};

}  // namespace

std::uint64_t split_bytes(const NodeInfo& tree, const Resolution& resolution, const SplitPlan& plan,
                          const FileRange& files) {
  std::uint64_t total = 0;
  for_each_node(tree, [&](const NodeInfo& ds) {
    if (ds.is_group() || ds.is_further_name() || ds.null_space) return;
    const LeafRule& rule = resolution.dataset_rule(ds.path);
    if (!rule.cuts_rows()) {
      total += element_count(ds.shape) * ds.element_size * files.size();
      return;
    }
    const auto axis = static_cast<std::size_t>(rule.axis);
    std::uint64_t row = ds.element_size;  // bytes of one row along the axis
    for (std::size_t d = 0; d < ds.shape.size(); ++d)
      if (d != axis) row *= ds.shape[d];
    const std::vector<RowMap>& pieces = plan.pieces.at(ds.path);
    for (std::uint64_t f = files.begin; f < files.end; ++f) total += rows_in(pieces[f]) * row;
  });
  return total;
}

void write_outputs(const SplitSource& source, const std::vector<std::uint64_t>& files,
                   const std::vector<h5::Id>& outputs, const std::vector<std::string>& names) {
  SplitWriter(source, files, names).write(outputs);
}

}  // namespace mb::io::split
