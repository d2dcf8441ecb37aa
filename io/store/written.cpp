#include "io/store/written.hpp"

#include <filesystem>

namespace mb::io::store {

WrittenFiles::WrittenFiles(std::string dir, const PublicationPlan& plan)
    : dir_(std::move(dir)), names_(plan.names), mine_(plan.mine) {
  outputs_.emplace();
  for (std::uint64_t i = mine_.begin; i < mine_.end; ++i) temps_.push_back(outputs_->add(final_path(i)));
}

std::string WrittenFiles::temporary(std::uint64_t index) const {
  return index >= mine_.begin && index < mine_.end ? temps_[index - mine_.begin] : "";
}

std::string WrittenFiles::final_path(std::uint64_t index) const {
  return (std::filesystem::path(dir_) / names_[index]).string();
}

}  // namespace mb::io::store
