// Vocab: the two-way map between tokens and the integer ids a model sees
// (d2l §9.2 "Converting Raw Text into Sequence Data", class Vocab).
//
// Ids are handed out in this order:
//   0                      <unk>, which every unknown token maps to
//   1 … R                  the reserved tokens, in the order given
//                          (d2l passes {"<pad>", "<bos>", "<eos>"})
//   R+1 …                  the corpus tokens seen at least min_freq times,
//                          most frequent first
// Ties in frequency keep first-seen order: d2l sorts collections.Counter
// (which remembers insertion order) by count with Python's stable sort, and
// qkv does the same with std::stable_sort, so both give the same ids.
//
//   Vocab vocab(lines, /*min_freq=*/2, {"<pad>", "<bos>", "<eos>"});
//   vocab["hello"]            -> its id, or vocab.unk() if it was never kept
//   vocab[tokens]             -> a list of ids, for a std::vector<std::string>
//   vocab.to_tokens({4, 5})   -> {"go", "."}
// NOTE: pass lists of tokens as named vectors: a braced list of two strings,
// vocab[{"go", "."}], is ambiguous in C++ (it could also build one
// std::string from two char pointers), and the compiler refuses it.
//
// What is left out on purpose: saving/loading (rebuild it from the corpus),
// subword tokenisation.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qkv::data {

class Vocab {
 public:
  Vocab();  // only <unk>
  // From a flat list of tokens, or from lines of tokens (counted together).
  // min_freq ≥ 0: tokens seen fewer times than that map to <unk>.
  explicit Vocab(const std::vector<std::string>& tokens, int64_t min_freq = 0,
                 const std::vector<std::string>& reserved_tokens = {});
  explicit Vocab(const std::vector<std::vector<std::string>>& lines, int64_t min_freq = 0,
                 const std::vector<std::string>& reserved_tokens = {});

  int64_t size() const { return static_cast<int64_t>(idx_to_token_.size()); }  // d2l's len(vocab)
  int64_t unk() const { return 0; }                                            // the id of <unk>
  bool contains(const std::string& token) const { return token_to_idx_.contains(token); }

  // token -> id (unknown tokens -> unk()), one or many: d2l's vocab[tokens].
  int64_t operator[](const std::string& token) const;
  std::vector<int64_t> operator[](const std::vector<std::string>& tokens) const;

  // id -> token, one or many; an id outside [0, size()) is an Error.
  const std::string& to_token(int64_t index) const;
  std::vector<std::string> to_tokens(const std::vector<int64_t>& indices) const;

  const std::vector<std::string>& idx_to_token() const { return idx_to_token_; }  // every token, by id
  // Every distinct corpus token with its count, most frequent first (before
  // min_freq filtering; reserved tokens are not counted): d2l's token_freqs.
  const std::vector<std::pair<std::string, int64_t>>& token_freqs() const { return token_freqs_; }

 private:
  void add(const std::string& token);  // give token the next id

  std::vector<std::string> idx_to_token_;
  std::unordered_map<std::string, int64_t> token_to_idx_;
  std::vector<std::pair<std::string, int64_t>> token_freqs_;
};

}  // namespace qkv::data
