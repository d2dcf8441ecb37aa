#include "core/credentials.hpp"

#include <cstdio>
#include <ctime>

#include "core/error.hpp"

namespace mb {

Freshness freshness(const Credentials& c, Clock::time_point now) {
  if (!c.expires) return Freshness::Fresh;
  if (*c.expires - now <= kRefreshRequired) return Freshness::Required;
  if (*c.expires - now <= kRefreshAdvised) return Freshness::Advised;
  return Freshness::Fresh;
}

std::optional<Clock::time_point> parse_aws_time(std::string_view text) {
  const std::string t(text);
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6 || consumed != 19)
    return std::nullopt;
  std::string_view rest = text.substr(19);
  if (rest.starts_with('.')) {  // fractional seconds: dropped (expiry is checked with minutes to spare)
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') rest.remove_prefix(1);
  }
  if (rest != "Z" && rest != "+00:00" && rest != "+0000") return std::nullopt;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return Clock::from_time_t(timegm(&tm));
}

std::vector<std::string> split_command(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0; else word += c;
    } else if (quote == '"') {
      if (c == '"') quote = 0;
      else if (c == '\\' && i + 1 < line.size() && std::string_view("\"\\$`").find(line[i + 1]) != std::string_view::npos)
        word += line[++i];
      else word += c;
    } else if (c == '\'' || c == '"') {
      quote = c, in_word = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      word += line[++i], in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word)), word.clear(), in_word = false;
    } else {
      word += c, in_word = true;
    }
  }
  if (quote) throw usage_error("credential_process: a quote is not closed");
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace mb
