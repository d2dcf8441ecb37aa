#include "specs/journal.hpp"

#include <nlohmann/json.hpp>

namespace mb::specs {

std::string journal_text(std::string_view run, const FileRecord& file) {
  nlohmann::ordered_json j{{"format", kJournalFormat}, {"version", kJournalVersion}, {"run", run},
                           {"name", file.name},        {"size", file.size},           {"digest", file.digest}};
  return j.dump() + "\n";
}

namespace {

struct Parsed {
  std::string run;
  FileRecord record;
};

std::optional<Parsed> parse_entry(std::string_view text, std::string_view file) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || j.size() != 6) return std::nullopt;
  const auto is = [&](const char* key, nlohmann::json::value_t type) {
    return j.contains(key) && j[key].type() == type;
  };
  using T = nlohmann::json::value_t;
  if (!is("format", T::string) || j["format"] != kJournalFormat) return std::nullopt;
  if (!is("version", T::number_unsigned) || j["version"] != kJournalVersion) return std::nullopt;
  if (!is("run", T::string) || !is("name", T::string) || j["name"].get<std::string>() != file) return std::nullopt;
  if (!is("size", T::number_unsigned) || !is("digest", T::string)) return std::nullopt;
  const std::string digest = j["digest"].get<std::string>();
  if (digest.size() != 32 || digest.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  return Parsed{j["run"].get<std::string>(), FileRecord{std::string(file), j["size"].get<std::uint64_t>(), digest}};
}

}  // namespace

std::optional<FileRecord> parse_journal(std::string_view text, std::string_view run, std::string_view file) {
  auto parsed = parse_entry(text, file);
  if (!parsed || parsed->run != run) return std::nullopt;
  return std::move(parsed->record);
}

std::optional<std::string> journal_run(std::string_view text, std::string_view file) {
  auto parsed = parse_entry(text, file);
  if (!parsed) return std::nullopt;
  return std::move(parsed->run);
}

}  // namespace mb::specs
