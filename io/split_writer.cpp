#include "io/split_writer.hpp"

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "io/atomic.hpp"
#include "io/guard.hpp"
#include "io/h5.hpp"
#include "io/manifest.hpp"
#include "io/workers.hpp"

namespace mb::io {
namespace fs = std::filesystem;
namespace {

// At most this many microbatch files are open at once; the input is walked
// once per batch of outputs, so each dataset is opened ceil(N/K) times.
constexpr std::size_t kOpenOutputs = 64;


bool is_split_output(const std::string& name) {
  const bool h5 = name.ends_with(".h5");
  const bool microbatch = (name.rfind("microbatch-", 0) == 0 || name.rfind("rank-", 0) == 0) && h5;
  const bool temporary = name.rfind(".microbatch-", 0) == 0 || name.rfind(".rank-", 0) == 0 ||
                         name.rfind(".manifest.json.tmp-", 0) == 0;
  return microbatch || temporary || name == kManifestName;
}

// Refuses to overwrite an earlier split unless forced; when forced, removes
// it, manifest first, so that no mix of old and new can pass for finished.
// The input itself is never among what is removed.
void prepare_output_dir(const std::string& dir, bool force, const std::string& input) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error(dir + ": the output path exists and is not a directory");
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create the output directory: " + ec.message());
  std::vector<fs::path> earlier;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (is_split_output(entry.path().filename().string())) earlier.push_back(entry.path());
  if (ec) throw Error(dir + ": cannot list the output directory: " + ec.message());
  if (earlier.empty()) return;
  for (const auto& p : earlier)
    if (fs::equivalent(p, input, ec))
      throw Error(dir + ": the input " + input + " has a microbatch file name in the output directory; choose "
                  "another output directory");
  if (!force)
    throw Error(dir + ": holds the output of an earlier split (" + earlier.front().filename().string() +
                "); use --force to replace it");
  std::sort(earlier.begin(), earlier.end(), [](const fs::path& a, const fs::path& b) {
    return (a.filename() == kManifestName) > (b.filename() == kManifestName);
  });
  for (const auto& p : earlier)
    if (!fs::remove(p, ec) || ec) throw Error(p.string() + ": cannot remove the earlier output: " + ec.message());
}

class SplitWriter {
 public:
  SplitWriter(const SplitJob& job, const Resolution& resolution, const SplitPlan& plan, hid_t input)
      : job_(job), resolution_(resolution), plan_(plan), input_(input) {}

  // Writes output files [first, first + outputs.size()) from the tree;
  // `names` are their final paths, for messages.
  void write_batch(const NodeInfo& tree, std::uint64_t first, std::vector<h5::Id>& outputs,
                   const std::vector<std::string>& names) {
    first_ = first;
    names_ = &names;
    std::vector<hid_t> roots;
    for (auto& f : outputs) roots.push_back(f.get());
    h5::Id root(H5Gopen2(input_, "/", H5P_DEFAULT), {job_.input, "/"}, "cannot open the root group");
    const h5::Attributes attributes = h5::read_attributes(root.get(), {job_.input, "/"});
    for (std::size_t i = 0; i < roots.size(); ++i) h5::write_attributes(roots[i], attributes, out_where(i, "/"));
    write_children(tree, root.get(), roots);
  }

 private:
  h5::Location out_where(std::size_t i, const std::string& path) const { return {(*names_)[i], path}; }

  void write_children(const NodeInfo& group, hid_t src_group, const std::vector<hid_t>& dst_groups) {
    for (const auto& child : group.children) {
      throw_if_interrupted();
      const h5::Location src_where{job_.input, child.path};
      h5::Id src = h5::open_object(src_group, child.name, src_where);
      if (child.is_group()) {
        write_group(child, src.get(), dst_groups);
      } else {
        write_dataset(child, src.get(), dst_groups);
      }
    }
  }

  void write_group(const NodeInfo& group, hid_t src, const std::vector<hid_t>& dst_parents) {
    const h5::Attributes attributes = h5::read_attributes(src, {job_.input, group.path});
    std::vector<h5::Id> created;
    std::vector<hid_t> dst;
    for (std::size_t i = 0; i < dst_parents.size(); ++i) {
      const auto where = out_where(i, group.path);
      created.emplace_back(H5Gcreate2(dst_parents[i], group.name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                           where, "cannot create the group");
      h5::write_attributes(created.back().get(), attributes, where);
      dst.push_back(created.back().get());
    }
    write_children(group, src, dst);
  }

  // Everything the copies of one dataset need is read from the input once:
  // its description, its attributes and, when small, its data (so that the
  // tens of thousands of small datasets of a real batch cost few library
  // calls each). Large data is copied piece by piece (raw chunks or slabs).
  void write_dataset(const NodeInfo& ds, hid_t src, const std::vector<hid_t>& dst_parents) {
    const h5::Location src_where{job_.input, ds.path};
    const LeafRule& rule = resolution_.dataset_rule(ds.path);
    const h5::DatasetShape shape = h5::describe_dataset(src, src_where);
    const h5::Attributes attributes = h5::read_attributes(src, src_where);
    std::optional<h5::Buffer> whole;
    // (Filtered data is left to copy_rows, which moves aligned chunks without recompressing.)
    const bool filtered = H5Pget_nfilters(shape.dcpl.get()) > 0;
    const bool small = data_bytes(ds, shape) <= h5::kWholeInMemory;
    if (!ds.null_space && !filtered && small && rule.mode != LeafRule::Mode::Offsets) {
      whole.emplace(shape.type.get());
      h5::read_box(src, shape.type.get(), Shape(ds.rank(), 0), ds.shape, *whole, src_where);
    }
    const auto pieces = plan_.pieces.find(ds.path);
    std::optional<h5::Creation> creation;  // shared by the copies of one extent
    auto create = [&](hid_t parent, const Shape& dims, std::optional<int> axis, const h5::Location& where) {
      if (!creation || creation->dims != dims) creation = h5::prepare_creation(shape, dims, axis, where);
      return h5::create_dataset(shape, *creation, parent, ds.name, where);
    };
    for (std::size_t i = 0; i < dst_parents.size(); ++i) {
      const auto where = out_where(i, ds.path);
      if (!rule.cuts_rows()) {
        h5::Id dst = create(dst_parents[i], ds.shape, std::nullopt, where);
        h5::write_attributes(dst.get(), attributes, where);
        if (whole) {
          h5::write_from_memory(dst.get(), shape.type.get(), whole->data(), ds.shape, h5::Placement::origin(ds.rank()),
                                h5::Placement::origin(ds.rank()), ds.shape, where);
        } else {
          h5::copy_box(src, src_where, h5::Placement::origin(ds.rank()), dst.get(), where,
                       h5::Placement::origin(ds.rank()), ds.shape, job_.buffer_bytes);
        }
        continue;
      }
      const auto axis = static_cast<std::size_t>(rule.axis);
      const RowMap& rows = pieces->second.at(first_ + i);
      Shape count = ds.shape;
      count[axis] = rows_in(rows);
      h5::Id dst = create(dst_parents[i], count, rule.axis, where);
      h5::write_attributes(dst.get(), attributes, where);
      if (rule.mode == LeafRule::Mode::Offsets) {
        write_rebased_offsets(src, src_where, rows.front(), dst.get(), where);
        continue;
      }
      // Each segment of the row map lands right after the previous one.
      std::uint64_t at = 0;
      for (const Segment& seg : rows) {
        count[axis] = seg.count;
        const auto to = h5::Placement::on_axis(ds.rank(), axis, at);
        const auto from = h5::Placement::on_axis(ds.rank(), axis, seg.begin, seg.stride);
        if (whole) {
          h5::write_from_memory(dst.get(), shape.type.get(), whole->data(), ds.shape, from, to, count, where);
        } else if (seg.stride == 1) {
          h5::copy_rows(src, src_where, seg.begin, dst.get(), where, at, seg.count, axis, job_.buffer_bytes);
        } else {
          h5::copy_box(src, src_where, from, dst.get(), where, to, count, job_.buffer_bytes);
        }
        at += seg.count;
      }
    }
  }

  static std::uint64_t data_bytes(const NodeInfo& ds, const h5::DatasetShape& shape) {
    std::uint64_t n = H5Tget_size(shape.type.get());
    for (auto d : ds.shape) n *= d;
    return n;
  }

  // A microbatch's offsets are its rows of the input's offsets, shifted to
  // start at 0 (offsets are S+1 integers: small enough to hold whole).
  static void write_rebased_offsets(hid_t src, const h5::Location& src_where, const Segment& rows, hid_t dst,
                                    const h5::Location& where) {
    h5::Buffer values(H5T_NATIVE_INT64);
    h5::read_box(src, H5T_NATIVE_INT64, {rows.begin}, {rows.count}, values, src_where);
    auto* v = static_cast<std::int64_t*>(values.data());
    const std::int64_t base = v[0];
    for (std::uint64_t k = 0; k < rows.count; ++k) v[k] -= base;
    h5::write_box(dst, H5T_NATIVE_INT64, {0}, {rows.count}, v, where);
  }

  const SplitJob& job_;
  const Resolution& resolution_;
  const SplitPlan& plan_;
  hid_t input_;
  std::uint64_t first_ = 0;
  const std::vector<std::string>* names_ = nullptr;
};

Manifest make_manifest(const SplitJob& job, const Resolution& resolution, const SplitPlan& plan,
                       const std::vector<std::string>& files) {
  Manifest m;
  m.tool_version = job.tool_version;
  m.source = job.input;
  m.spec = job.spec;
  m.options = job.options;
  m.chunks = plan.count;
  m.files = files;
  m.sequences = plan.sequences;
  m.ranks = plan.ranks;
  for (const auto& [path, rows] : plan.pieces) {
    SplitDatasetRecord rec;
    rec.axis = resolution.dataset_rule(path).axis;
    rec.rows = rows;
    for (const auto& map : rows) rec.length += rows_in(map);  // the pieces cover the whole axis
    m.datasets[path] = std::move(rec);
  }
  return m;
}

}  // namespace

namespace {

// Writes output files [begin, end) under their temporary names.
void write_files(const SplitJob& job, const NodeInfo& tree, const Resolution& resolution, const SplitPlan& plan,
                 const std::vector<std::string>& finals, const std::vector<std::string>& temps, std::uint64_t begin,
                 std::uint64_t end, bool show_progress) {
  h5::Id input = h5::open_file_read_only(job.input);
  SplitWriter writer(job, resolution, plan, input.get());
  for (std::uint64_t first = begin; first < end; first += kOpenOutputs) {
    const std::uint64_t n = std::min<std::uint64_t>(kOpenOutputs, end - first);
    std::vector<h5::Id> handles;
    const std::vector<std::string> names(finals.begin() + static_cast<std::ptrdiff_t>(first),
                                         finals.begin() + static_cast<std::ptrdiff_t>(first + n));
    for (std::uint64_t i = first; i < first + n; ++i) handles.push_back(h5::create_file(temps[i], finals[i]));
    writer.write_batch(tree, first, handles, names);
    for (std::size_t i = 0; i < handles.size(); ++i) handles[i].close({names[i], ""});
    if (show_progress && job.progress) job.progress(first + n - begin, end - begin);
  }
}

}  // namespace

std::vector<std::string> write_split(const SplitJob& job, const NodeInfo& tree, const Resolution& resolution,
                                     const SplitPlan& plan) {
  prepare_output_dir(job.output_dir, job.force, job.input);
  // Every output is registered (and so removed on failure) before any worker starts.
  std::vector<std::string> files, finals, temps;
  AtomicOutputs outputs;
  for (std::uint64_t i = 0; i < plan.files(); ++i) {
    files.push_back(output_file_name(plan, i));
    finals.push_back((fs::path(job.output_dir) / files.back()).string());
    temps.push_back(outputs.add(finals.back()));
  }
  // Worker w writes files [w*F/W, (w+1)*F/W); this process is worker 0.
  const std::uint64_t workers = std::max<std::uint64_t>(1, std::min<std::uint64_t>(job.workers, plan.files()));
  run_workers(
      workers,
      [&](std::uint64_t w) {
        write_files(job, tree, resolution, plan, finals, temps, w * plan.files() / workers,
                    (w + 1) * plan.files() / workers, w == 0);
      },
      job.stall_seconds);

  outputs.publish();
  const Manifest manifest = make_manifest(job, resolution, plan, files);
  write_text_atomically((fs::path(job.output_dir) / kManifestName).string(), manifest_text(manifest));
  outputs.keep();
  return files;
}

}  // namespace mb::io
