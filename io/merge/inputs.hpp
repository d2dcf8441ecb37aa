#pragma once
// What a merge's command line names: one split directory, or files. Files
// that sit beside the manifest.json of the split that wrote them are that
// split's, and must be all of its files in its order; the manifest then
// gives the spec and layout, and merge verifies every file against it.
#include <optional>
#include <string>
#include <vector>

#include "core/source.hpp"
#include "specs/manifest.hpp"
#include "io/store/store.hpp"

namespace mb::io::merge {

struct MergeSources {
  std::vector<Source> files;                // the microbatch files, in order
  std::optional<specs::Manifest> manifest;  // the split they come from, when known
  std::string manifest_path;
  std::vector<Source> read_besides;  // files read besides the inputs (the manifest): never the output
};

// Files of a split that is not finished: a split --resume that stopped
// leaves the files it published under their final names, a journal entry
// beside each (specs/journal.hpp) and no manifest (written last, after
// which the entries go). Merged as plain files, they would give part of
// the batch with exit 0; that must be asked for (merge --allow-unfinished).
enum class Unfinished { Refuse, Allow };

// Throws mb::Error (exit 2 for a directory mixed with files; exit 1 for
// files that do not match their manifest, or, unless `unfinished` allows
// them, files in a place that holds an unfinished split's journal; exit 1
// for such a place named as a directory), one line saying what to do.
MergeSources find_sources(const std::vector<Source>& arguments, Unfinished unfinished);

// Refuses an output (member `name` of `place`) that is one of the files the
// merge reads: an input, or the manifest beside them, on any kind of place
// and even with --force.
void refuse_reading(const store::Store& place, const std::string& name, const MergeSources& sources);

}  // namespace mb::io::merge
