#pragma once
// Derived leaves ({"max_seqlen": "/cu_seqlens"}, {"num_tokens": ...}) in
// files: a file's stored values checked against the offsets it holds, and
// a written file's values computed from the offsets written into it (read
// back, so that however a job lays out each file's offsets, the value
// describes them).
#include <map>
#include <string>
#include <vector>

#include "core/packed.hpp"
#include "core/resolve.hpp"
#include "core/tree.hpp"
#include "io/h5/handle.hpp"

namespace mb::io::tree {

// One derived leaf: the dataset at `path`, or (when `attribute` is not
// empty) that attribute of the object at `path`.
struct DerivedTarget {
  std::string path;
  std::string attribute;
  LeafRule rule;
  std::string text() const { return attribute.empty() ? path : path + "@" + attribute; }
};

// Every derived leaf of the tree, under the first name of its object (a
// further name is the same object).
std::vector<DerivedTarget> derived_targets(const NodeInfo& tree, const Resolution& resolution);

// Refuses a stored value that is not what the file's offsets give (by
// path; num_rows: the length of the dataset in the file holding `object`):
// the dataset `object` (`attribute` empty), or that attribute of `object`;
// `where` names it ("file: /path" or "file: /path@name").
void check_derived_value(hid_t object, const std::string& attribute, const LeafRule& rule,
                         const std::map<std::string, Offsets>& offsets, const h5::Location& where);

// The same for every target of a file (`file`, named `file_name`), with
// its offsets (checked, by path).
void check_derived_values(hid_t file, const std::string& file_name, const std::vector<DerivedTarget>& targets,
                          const std::map<std::string, Offsets>& offsets);

// Writes every target's value into `file`, computed from the offsets it
// holds; a value its leaf's dtype cannot hold is refused.
void write_derived_values(hid_t file, const std::string& file_name, const std::vector<DerivedTarget>& targets);

}  // namespace mb::io::tree
