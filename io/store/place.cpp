#include "io/store/place.hpp"

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "io/run/identity.hpp"
#include "io/publish/outputs.hpp"
#include "io/run/guard.hpp"
#include "specs/file_names.hpp"

namespace mb::io::store {

std::vector<Entry> split_outputs(const Store& store) {
  std::vector<Entry> out;
  for (auto& entry : store.list())
    if (specs::is_final_split_name(entry.name)) out.push_back(std::move(entry));
  return out;
}

void refuse_reading(const Store& store, std::string_view name, const std::vector<Source>& read) {
  for (const auto& source : read)
    if (store.holds(source, name))
      throw Error(store.shown(name) + ": the output would replace " + source.shown() + ", which this run reads");
}

void ready_to_commit() {
  run::throw_if_interrupted();
  run::check_inputs_unchanged();
}

void undo_lost(const Error& failed, const std::function<void()>& remove) {
  if (failed.kind() != ErrorKind::Environment) throw;  // refused: nothing landed, and what stands is not ours
  try {
    remove();
  } catch (const Error& undo) {
    throw Error(fmt::format("{}; it may have been stored all the same and could not be removed ({}): remove it",
                            failed.what(), undo.what()),
                failed.kind(), failed.where());
  }
  throw;
}

void commit(WritableStore& store, std::string_view name, const std::string& text) {
  ready_to_commit();
  try {
    store.put_text(name, text);
  } catch (const Error& e) {
    undo_lost(e, [&] { store.remove(name); });
  }
}

}  // namespace mb::io::store
