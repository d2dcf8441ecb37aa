#pragma once
// Whose code a fatal signal stopped: the HDF5 library's (libhdf5, or a
// filter plugin, which only libhdf5 calls) or microbatch's own. The crash
// guard (guard.hpp) tells the user which: a damaged input, or a defect of
// microbatch to report. Everything here that a signal handler calls reads
// fixed tables and allocates nothing.
#include <cstddef>
#include <cstdint>
#include <optional>

namespace mb::io::run {

enum class CodeOwner : std::uint8_t {
  Other,    // the C and C++ runtimes, libz, MPI, plugins loaded later, ...
  Ours,     // the microbatch executable (its libraries are linked into it)
  Library,  // libhdf5
};

struct CodeRange {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;  // past the last byte
  CodeOwner owner = CodeOwner::Other;
};

// The executable segments of the loaded objects, each with its owner. A
// fixed table: filled before the handlers are installed, read by them.
class CodeMap {
 public:
  static constexpr std::size_t kMaxRanges = 256;
  void add(const CodeRange& range);
  // The owner of the code at `address`; none when no object holds it (a
  // jump to a wild address, or an object loaded after the map was made).
  std::optional<CodeOwner> owner_of(std::uintptr_t address) const;

 private:
  CodeRange ranges_[kMaxRanges]{};
  std::size_t count_ = 0;
};

// What the handler knows of a fault.
struct FaultSite {
  std::uintptr_t pc = 0;  // the faulting instruction (the signal's ucontext)
  // Where a function entered by a call returns: the word at the stack
  // pointer (x86-64) or the link register (aarch64). Right only when the
  // fault is the callee's first instruction (a call to a wild address);
  // used only when `pc` lies in no object.
  std::uintptr_t return_address = 0;
  // backtrace() taken in the handler: the handler's own frames, then `pc`,
  // then the return addresses of its callers, innermost first.
  const std::uintptr_t* frames = nullptr;
  std::size_t frame_count = 0;
  // The C library's string and memory functions are replaced by a
  // sanitizer's interceptors, linked into the executable (ASan, TSan).
  bool intercepted = false;
};

enum class Blame { Library, Ours };

// Whom to blame for a fault; see fault.cpp for the rule and why.
Blame blame_fault(const CodeMap& code, const FaultSite& site);

// Fills `code` from the objects loaded now (dl_iterate_phdr): the main
// program's executable segments as Ours, those of any object whose file
// name holds "libhdf5" as Library, the others as Other.
void map_loaded_code(CodeMap& code);

}  // namespace mb::io::run
