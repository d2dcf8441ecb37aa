// The rule that blames a fault on libhdf5 or on microbatch, and the map of
// loaded code it reads.
//
// The faulting instruction alone does not say whose the fault is: libhdf5
// overruns its buffers through memcpy and strdup (a corrupt heap, a corrupt
// object header), so the instruction is in the C library while the defect
// is the library's reading of a damaged file; our code can hand memcpy a bad
// pointer just the same. So the rule walks the stack from the faulting
// instruction outwards and blames the first frame that is libhdf5's or ours,
// skipping the runtimes (libc, libstdc++, libz, MPI) that both call.
//
// A filter plugin needs no range of its own: plugins are loaded by libhdf5
// after the map is made, and are only ever called by libhdf5, so the walk
// passes through them to libhdf5's frame that called the filter.
//
// A callback of ours that libhdf5 calls (the remote file driver) stands
// innermost: a fault in it is ours, though libhdf5 is further out.
//
// When no frame is either (the unwinder stopped at code without unwind
// information, or a jump to a wild address left nothing to unwind), the
// fault is blamed on microbatch: telling the user that a healthy input is
// corrupt sends them after the wrong thing, while a report of a defect that
// was the library's after all costs a maintainer a look.
//
// Sanitizer builds (ASan, TSan) link the interceptors of memcpy, strdup and
// friends into the executable, so that libhdf5's calls to them run in "our"
// code: there, a fault with any libhdf5 frame on the stack is the library's.
// (A fault of our own code there is reported by the sanitizer itself.)
#include "io/run/fault.hpp"

#include <link.h>

#include <cstring>

namespace mb::io::run {

void CodeMap::add(const CodeRange& range) {
  if (count_ < kMaxRanges && range.begin < range.end) ranges_[count_++] = range;
}

std::optional<CodeOwner> CodeMap::owner_of(std::uintptr_t address) const {
  for (std::size_t i = 0; i < count_; ++i)
    if (address >= ranges_[i].begin && address < ranges_[i].end) return ranges_[i].owner;
  return std::nullopt;
}

Blame blame_fault(const CodeMap& code, const FaultSite& site) {
  // The frames after `pc` in the backtrace are its callers; without `pc`
  // there, the unwinder did not get through the signal frame: none.
  std::size_t first_caller = site.frame_count;
  for (std::size_t i = 0; i < site.frame_count; ++i)
    if (site.frames[i] == site.pc) {
      first_caller = i + 1;
      break;
    }
  std::optional<Blame> innermost;
  bool library_on_stack = false;
  const auto visit = [&](std::uintptr_t address) {
    const CodeOwner owner = code.owner_of(address).value_or(CodeOwner::Other);
    library_on_stack = library_on_stack || owner == CodeOwner::Library;
    if (!innermost && owner != CodeOwner::Other) innermost = owner == CodeOwner::Library ? Blame::Library : Blame::Ours;
  };
  visit(site.pc);
  // A return address is the byte after its call, which may be the first
  // byte after the caller's function: the byte before is the call's.
  for (std::size_t i = first_caller; i < site.frame_count; ++i)
    if (site.frames[i] != 0) visit(site.frames[i] - 1);
  if (!code.owner_of(site.pc) && site.return_address != 0) visit(site.return_address - 1);
  if (site.intercepted) return library_on_stack ? Blame::Library : Blame::Ours;
  return innermost.value_or(Blame::Ours);
}

namespace {

struct Mapping {
  CodeMap* code;
  bool first = true;  // dl_iterate_phdr gives the main program first
};

int add_object(dl_phdr_info* info, std::size_t, void* data) {
  auto& mapping = *static_cast<Mapping*>(data);
  CodeOwner owner = CodeOwner::Other;
  if (mapping.first) {
    owner = CodeOwner::Ours;
  } else if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, "libhdf5") != nullptr) {
    owner = CodeOwner::Library;
  }
  mapping.first = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0) continue;
    const std::uintptr_t begin = info->dlpi_addr + segment.p_vaddr;
    mapping.code->add({begin, begin + segment.p_memsz, owner});
  }
  return 0;
}

}  // namespace

void map_loaded_code(CodeMap& code) {
  Mapping mapping{&code};
  dl_iterate_phdr(add_object, &mapping);
}

}  // namespace mb::io::run
