#include "io/merge/merge.hpp"

#include "core/resolve.hpp"
#include "io/h5/file.hpp"
#include "io/merge/steps.hpp"
#include "io/outputs.hpp"
#include "io/prepare.hpp"
#include "io/tree_reader.hpp"

namespace mb::io {
namespace {

void check_options(const MergeJob& job, const Resolution& resolution) {
  if (job.dp.degree == 1) return;
  for (const auto& [path, rule] : resolution.datasets)
    if (rule.mode == LeafRule::Mode::Offsets)
      throw usage_error("--dp-degree does not combine with packed sequences (" + path + " is \"offsets\")");
}

}  // namespace

void merge(const MergeJob& job, const SpecNode& spec, const std::string& spec_name) {
  if (job.inputs.empty()) throw usage_error("merge needs at least one input");
  // Every input is opened once, for the structure check and the copy alike
  // (a reopened file would read all its metadata again).
  std::vector<h5::Id> files;
  std::vector<std::string> paths;
  for (const auto& input : job.inputs) {
    files.push_back(h5::open_read_only(input.path));
    paths.push_back(input.path);
  }
  const NodeInfo tree = h5::read_tree(files.front().get(), paths.front());
  const Resolution resolution = about_file(paths.front(), [&] { return resolve(tree, spec, spec_name); });
  check_options(job, resolution);
  check_output_file(job.output, paths, job.force);
  AtomicOutputs outputs;
  const std::string temp = outputs.add(job.output);
  h5::Id out = h5::create_file(temp, job.output, {tree.has_large_attribute()});
  merging::write_tree({job, resolution}, tree, files, out.get());
  out.close({job.output, ""});
  if (job.progress) job.progress(1, 1);
  outputs.publish();
  outputs.keep();
}

}  // namespace mb::io
