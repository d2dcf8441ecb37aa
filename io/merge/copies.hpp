#pragma once
// Inputs that are copies of the model (see copies.cpp): merged from their
// file bytes, with no walk.
#include <map>
#include <memory>
#include <string>

#include "core/clones.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merge {

struct MergeState;   // state.hpp
struct ModelLayout;  // copies.cpp

// Where each split dataset's data lies in the model, while every one is
// one run of bytes read whole.
struct CopyState {
  bool possible = false;  // by the job and the rules (copies_possible)
  bool copies = true;     // false once a split dataset's data is not one such run
  std::map<std::string, ByteSpan> model_data;
  // The same, laid out once for every later input.
  std::shared_ptr<const ModelLayout> layout;
};

// Whether any input could be a copy (decided once, before input 0).
bool copies_possible(const Context& ctx);
// At input 0, notes where a split dataset's data lies in the model
// (`whole`: its result assembled in memory, if it is).
void note_model_data(const Context& ctx, CopyState& state, const DatasetPair& in, const h5::Buffer* whole);
// Merges input `ctx.input` as a copy of the model when it is one; false,
// having done nothing, when it is not (then the walk merges it).
bool merge_copy(const Context& ctx, MergeState& state, hid_t output);

}  // namespace mb::io::merge
