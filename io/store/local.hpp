#pragma once
// A local directory as a Store: members are regular files in it; small
// members are written as a temporary, synced and renamed into place
// without replacing anything; a claim creates the directory if missing
// (removed again unless kept) and holds a flock(2) lock file in it.
#include <memory>
#include <string>

#include "io/store/store.hpp"

namespace mb::io::store {

// `dir` "" is the current directory, its members named bare ("x.h5").
std::unique_ptr<WritableStore> local_directory(std::string dir);

}  // namespace mb::io::store
