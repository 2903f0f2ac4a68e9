// Vocab: count the tokens, sort by count (stable), hand out ids.
#include <qkv/core/error.hpp>
#include <qkv/data/vocab.hpp>

#include <algorithm>

namespace qkv::data {

Vocab::Vocab() { add("<unk>"); }

namespace {
// Lines of tokens -> one list: every line's tokens are counted together.
std::vector<std::string> flatten(const std::vector<std::vector<std::string>>& lines) {
  std::vector<std::string> flat;
  for (const auto& line : lines) flat.insert(flat.end(), line.begin(), line.end());
  return flat;
}
}  // namespace

Vocab::Vocab(const std::vector<std::vector<std::string>>& lines, int64_t min_freq,
             const std::vector<std::string>& reserved_tokens)
    : Vocab(flatten(lines), min_freq, reserved_tokens) {}

Vocab::Vocab(const std::vector<std::string>& tokens, int64_t min_freq,
             const std::vector<std::string>& reserved_tokens) {
  if (min_freq < 0) fail("Vocab: min_freq {} must be >= 0", min_freq);

  // <unk> first, then the reserved tokens in the order given.
  add("<unk>");
  for (const std::string& token : reserved_tokens) {
    if (contains(token)) fail("Vocab: reserved token '{}' is given twice (or is <unk>, which is always id 0)", token);
    add(token);
  }

  // Count, remembering the order in which tokens were first seen (as
  // collections.Counter does) ...
  std::unordered_map<std::string, size_t> slot;  // token -> its place in token_freqs_
  for (const std::string& token : tokens) {
    auto [it, is_new] = slot.try_emplace(token, token_freqs_.size());
    if (is_new) token_freqs_.emplace_back(token, 0);
    token_freqs_[it->second].second += 1;
  }
  // ... and sort by count, most frequent first. NOTE: stable, so equal counts
  // keep first-seen order, exactly like Python's sorted(..., reverse=True).
  std::stable_sort(token_freqs_.begin(), token_freqs_.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });

  // Keep the tokens seen at least min_freq times; <unk> or a reserved token
  // met in the corpus keeps the id it already has.
  for (const auto& [token, freq] : token_freqs_) {
    if (freq < min_freq) break;  // sorted: every later token is rarer
    if (!contains(token)) add(token);
  }
}

void Vocab::add(const std::string& token) {
  token_to_idx_.emplace(token, size());
  idx_to_token_.push_back(token);
}

int64_t Vocab::operator[](const std::string& token) const {
  auto it = token_to_idx_.find(token);
  return it == token_to_idx_.end() ? unk() : it->second;
}

std::vector<int64_t> Vocab::operator[](const std::vector<std::string>& tokens) const {
  std::vector<int64_t> ids;
  ids.reserve(tokens.size());
  for (const std::string& token : tokens) ids.push_back((*this)[token]);
  return ids;
}

const std::string& Vocab::to_token(int64_t index) const {
  if (index < 0 || index >= size()) fail("Vocab: index {} is out of range for a vocabulary of size {}", index, size());
  return idx_to_token_[static_cast<size_t>(index)];
}

std::vector<std::string> Vocab::to_tokens(const std::vector<int64_t>& indices) const {
  std::vector<std::string> tokens;
  tokens.reserve(indices.size());
  for (int64_t index : indices) tokens.push_back(to_token(index));
  return tokens;
}

}  // namespace qkv::data
