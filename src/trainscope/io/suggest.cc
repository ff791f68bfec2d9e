#include "trainscope/io/suggest.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace trainscope::io {
namespace {

// Lower case, '_' as '-', an organisation prefix ("Qwen/") dropped.
std::string Normalise(std::string_view name) {
  const size_t slash = name.find('/');
  if (slash != std::string_view::npos && !name.starts_with("-")) name = name.substr(slash + 1);
  std::string out;
  out.reserve(name.size());
  for (const char c : name) {
    out.push_back(c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

}  // namespace

int64_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<int64_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];
    row[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> ClosestName(std::string_view given,
                                       std::span<const std::string> candidates) {
  // No name is longer than this; a pasted blob is never close to one, and comparing it would
  // cost its length times every candidate's.
  constexpr size_t kMaxNameLength = 128;
  if (given.size() > kMaxNameLength) return std::nullopt;
  const std::string wanted = Normalise(given);
  if (wanted.empty()) return std::nullopt;
  std::optional<std::string> best;
  int64_t best_score = 0;
  for (const std::string& candidate : candidates) {
    const std::string name = Normalise(candidate);
    const int64_t distance = EditDistance(wanted, name);
    const int64_t limit =
        std::max<int64_t>(2, static_cast<int64_t>(std::max(wanted.size(), name.size()) / 3));
    // A candidate that extends what was typed is the likeliest meaning: it ranks before any
    // candidate that is merely close, the shortest extension first.
    const bool prefix = wanted.size() >= 4 && name.starts_with(wanted);
    if (distance > limit && !prefix) continue;
    const int64_t score = prefix ? distance - 1000 : distance;
    if (!best || score < best_score) {
      best = candidate;
      best_score = score;
    }
  }
  return best;
}

std::string Abbreviated(std::string_view text) {
  constexpr size_t kMaxChars = 60;
  if (text.size() <= kMaxChars) return std::string(text);
  return std::string(text.substr(0, kMaxChars - 3)) + "...";
}

std::string DidYouMean(std::string_view given, std::span<const std::string> candidates) {
  const std::optional<std::string> closest = ClosestName(given, candidates);
  return closest ? " (did you mean " + *closest + "?)" : std::string();
}

}  // namespace trainscope::io
