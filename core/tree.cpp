#include "core/tree.hpp"

#include <algorithm>

namespace mb {

const NodeInfo* NodeInfo::child(const std::string& child_name) const {
  auto it = std::lower_bound(children.begin(), children.end(), child_name,
                             [](const NodeInfo& n, const std::string& key) { return n.name < key; });
  return (it != children.end() && it->name == child_name) ? &*it : nullptr;
}

bool NodeInfo::has_large_attribute() const {
  return std::any_of(attributes.begin(), attributes.end(), [](const AttributeInfo& a) { return a.large; });
}

bool NodeInfo::is_sequence() const {
  if (!is_group()) return false;
  for (std::size_t i = 0; i < children.size(); ++i)
    if (child(std::to_string(i)) == nullptr) return false;
  return true;
}

std::string shape_text(const Shape& shape) {
  std::string out = "(";
  for (std::size_t d = 0; d < shape.size(); ++d) out += (d ? ", " : "") + std::to_string(shape[d]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

std::string join_path(const std::string& parent, const std::string& name) {
  return parent == "/" ? "/" + name : parent + "/" + name;
}

}  // namespace mb
