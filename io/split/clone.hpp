#pragma once
// Split outputs made as copies of a model file (core/clones.hpp decides
// which): the model's bytes, copied by the kernel (a reflink where the
// filesystem has them), then each copy's own data written over the model's
// at the model's data offsets. Only data stored as one run of bytes in the
// model is written that way: contiguous, allocated, of a datatype that holds
// its values in place (no variable-length data, no references), read whole
// from an unfiltered input; a class whose model has anything else is
// written through libhdf5 like its model.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clones.hpp"
#include "io/h5/buffer.hpp"
#include "io/split/writer.hpp"

namespace mb::io::split {

// Where each patched dataset's data starts in a model (0 for one that
// holds no element).
using DataOffsets = std::vector<std::uint64_t>;

// What writing the models tells the copies, noted by the writer as it goes
// (SplitSource::notes): where each patched dataset's data lies in each
// model, or why it cannot be written over, and the input's elements of the
// patched datasets (those read whole, up to a budget of bytes), so that
// they are not read again.
class ModelNotes {
 public:
  ModelNotes(const ClonePlan& clones, const SplitPlan& plan, std::uint64_t budget);
  // Dataset `ds` of output file `file` is written as `dst`, created with
  // datatype `type` and creation properties `dcpl` (what it has: asking it
  // would copy them again); `whole` holds its input elements when the
  // writer read them whole.
  struct Written {
    std::uint64_t file;
    const NodeInfo& ds;
    hid_t dst, type, dcpl;
    const h5::Buffer* whole;
    const h5::Location& where;
  };
  void written(const Written& w);
  // The data offsets of model `file`; none (logged, with why) when some
  // patched dataset's data cannot be written over.
  std::optional<DataOffsets> offsets(std::uint64_t file, const std::string& shown) const;
  // Patched dataset `index`'s input elements as stored, if kept.
  const std::vector<unsigned char>* elements(std::size_t index) const;
  const ClonePlan& clones() const { return clones_; }

 private:
  struct Model {
    DataOffsets offsets;
    std::vector<bool> seen;
    std::string refused;  // why a dataset cannot be written over: "/path: why"
  };
  const ClonePlan& clones_;
  const SplitPlan& plan_;
  std::uint64_t budget_;
  std::map<std::string, std::size_t> index_;  // patched dataset path -> index
  std::map<std::uint64_t, Model> models_;     // the models that have copies
  std::vector<std::vector<unsigned char>> elements_;
  std::vector<bool> kept_;
};

// One copy to make: output file `file` of the plan, at its temporary path.
struct CopyTarget {
  std::uint64_t file;
  std::string temp;
  std::string shown;  // its final name, for messages
  std::string model;  // the written model's temporary path
  const DataOffsets* offsets;
};

// Makes the copies: the input's patched datasets not kept in `notes` are
// read once each, for all the targets (at most a few dozen: they are open
// at once).
void write_copies(const SplitSource& source, const ModelNotes& notes, const std::vector<CopyTarget>& targets);

}  // namespace mb::io::split
