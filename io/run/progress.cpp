#include "io/run/progress.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "core/error.hpp"

namespace mb::io::run {

ByteMeter::ByteMeter(std::uint64_t total, Progress show, std::uint64_t slots)
    : total_(total), show_(std::move(show)), slot_count_(std::max<std::uint64_t>(slots, 1)) {
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "shared between processes");
  const std::size_t bytes = slot_count_ * sizeof(std::atomic<std::uint64_t>);
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw Error(std::string("cannot map memory for progress: ") + std::strerror(errno));
  slots_ = static_cast<std::atomic<std::uint64_t>*>(memory);
  for (std::uint64_t i = 0; i < slot_count_; ++i) new (&slots_[i]) std::atomic<std::uint64_t>(0);
}

ByteMeter::~ByteMeter() { ::munmap(slots_, slot_count_ * sizeof(std::atomic<std::uint64_t>)); }

void ByteMeter::use_slot(std::uint64_t slot) {
  slot_ = std::min(slot, slot_count_ - 1);
  shows_ = slot == 0;
}

void ByteMeter::begin(std::uint64_t bytes) {
  if (in_piece_) end();
  piece_end_ = local_ + bytes;
  in_piece_ = true;
}

void ByteMeter::end() {
  if (!in_piece_) return;
  local_ = piece_end_;
  in_piece_ = false;
  publish();
}

void ByteMeter::add(std::uint64_t bytes) {
  if (!in_piece_) return;
  local_ = std::min(piece_end_, local_ + bytes);
  publish();
}

void ByteMeter::publish() {
  slots_[slot_].store(local_, std::memory_order_relaxed);
  show();
}

std::uint64_t ByteMeter::done() const {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < slot_count_; ++i) sum += slots_[i].load(std::memory_order_relaxed);
  return sum;
}

void ByteMeter::uploaded(std::uint64_t bytes) {
  uploaded_ = bytes;
  show();
}

void ByteMeter::show() const {
  if (shows_ && show_) show_(Tally{.done = std::min(done(), total_), .total = total_, .uploaded = uploaded_});
}

}  // namespace mb::io::run
