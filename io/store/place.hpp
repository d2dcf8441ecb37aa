#pragma once
// What the tool promises of every place it writes to, written once over the
// Store interface so that a directory, an S3 prefix and whatever comes next
// keep the same guarantees (docs/behavior.md): an output is never one of
// the run's inputs, not even with --force; a commit object (a manifest, a
// part record, a merged object) whose answer was lost is undone, so the
// exit status tells the truth; a split's outputs are told from everything
// else by name.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/source.hpp"
#include "io/store/store.hpp"

namespace mb::io::store {

// The place's split outputs under their final names (microbatch files,
// manifest.json, part records), as listed.
std::vector<Entry> split_outputs(const Store& store);

// Refuses (mb::Error) to write member `name` of `store` when it is one of
// `read`, the files the run reads (its inputs, a manifest beside them).
void refuse_reading(const Store& store, std::string_view name, const std::vector<Source>& read);

// Throws (mb::Error) when the run must not commit: a stop was asked for, or
// a watched input changed since the run began to read it (exit 3: the
// outputs may mix two versions of it). Every commit calls it just before its
// commit point, whatever the kind of place: a split's manifest or part
// record, a merged file; each member of a team before the team's vote.
void ready_to_commit();

// In the handler of `failed`, the failure of a write that a retry may cure
// (the store may have kept the object although its answer was lost): runs
// `remove`, then rethrows `failed` (or, when `remove` fails, an error that
// adds what it could not do). Any other failure is rethrown as it is (its
// type kept: remote::Exists): nothing landed, and what stands is not ours.
[[noreturn]] void undo_lost(const Error& failed, const std::function<void()>& remove);

// Writes `text` as member `name` (the commit point of a run: nothing passes
// for finished before it), once every watched input is checked unchanged.
// A failure that a retry may cure can have landed all the same (the store
// kept the object but its answer was lost): the member is then removed
// before the error goes on, so a failed run leaves no commit behind.
void commit(WritableStore& store, std::string_view name, const std::string& text);

}  // namespace mb::io::store
