#pragma once
// Progress reports from a job to whoever shows them (cli/ draws them on a
// terminal). No HDF5 here.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>

namespace mb::io::run {

// A job's work so far, in bytes.
struct Tally {
  std::uint64_t done = 0, total = 0;      // data written (split) or merged, of all
  std::optional<std::uint64_t> uploaded;  // outputs on S3: bytes of files the store confirmed
};

// Called with the tally. Called often (after every slab, chunk or range of
// file bytes, and each confirmed upload): the receiver throttles.
using Progress = std::function<void(const Tally&)>;

// Counts the bytes a job moves, for its progress display. The job cuts its
// work into pieces of known size (a dataset written into one output, an
// input file merged) whose sizes add up to `total`; the transfer layer adds
// bytes as each slab, chunk or range of file bytes is copied, and the count
// of a piece never runs past its size, so that the display moves steadily
// and ends at exactly `total` however a piece's bytes were moved.
//
// split -j: the counts live in memory shared with the worker processes (one
// slot each, made before fork()); only the process that made the meter
// shows them, summed over all slots.
class ByteMeter {
 public:
  ByteMeter(std::uint64_t total, Progress show, std::uint64_t slots = 1);
  ~ByteMeter();
  ByteMeter(const ByteMeter&) = delete;
  ByteMeter& operator=(const ByteMeter&) = delete;

  // In worker process `slot` (0: the process that made the meter).
  void use_slot(std::uint64_t slot);
  // A piece of `bytes` starts; end() counts it whole.
  void begin(std::uint64_t bytes);
  void end();
  // A copy moved `bytes` of the current piece (ignored outside a piece).
  void add(std::uint64_t bytes);
  // Bytes of files uploaded so far (outputs on S3; the process that made the meter), shown from now on.
  void uploaded(std::uint64_t bytes);
  // Shows the sum over all slots (only in the process that made the meter).
  void show() const;

  std::uint64_t total() const { return total_; }
  std::uint64_t done() const;  // summed over all slots

 private:
  void publish();

  std::uint64_t total_;
  Progress show_;
  std::atomic<std::uint64_t>* slots_ = nullptr;  // shared with forked workers
  std::uint64_t slot_count_;
  std::uint64_t slot_ = 0;
  bool shows_ = true;
  std::uint64_t local_ = 0;        // this process's count
  std::uint64_t piece_end_ = 0;    // local_ at which the current piece is whole
  bool in_piece_ = false;
  std::optional<std::uint64_t> uploaded_;
};

// A meter's add() for a copy that may have none.
inline void count_bytes(ByteMeter* meter, std::uint64_t bytes) {
  if (meter) meter->add(bytes);
}

}  // namespace mb::io::run
