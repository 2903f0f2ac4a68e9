// From a parallel corpus to arrays of token ids, for machine translation
// (d2l §10.5 "Machine Translation and the Dataset"), step by step:
//
//   read_data_nmt    the file -> its text ("english\tfrench" per line, UTF-8)
//   preprocess_nmt   lowercase, non-breaking spaces -> spaces, a space before , . ! ?
//   tokenize_nmt     each line -> a source and a target list of tokens
//   Vocab            (vocab.hpp) tokens -> ids
//   truncate_pad     a line cut or padded to num_steps
//   build_array_nmt  lines -> an (N, T) array of ids and their valid lengths
//   load_data_nmt    all of the above at once, for a file
//
// Dimensions: N sentence pairs, T = num_steps tokens per sentence.
//
// Where qkv differs from d2l on purpose (on a clean corpus the results are the same):
// - tokenize_nmt throws on a malformed line, naming its number, where d2l
//   silently skips it; only blank lines are skipped.
// - Runs of spaces make no empty tokens (d2l's split(' ') would give '').
// - num_examples keeps that many pairs (d2l's `i > num_examples` keeps one more).
// - Lowercasing covers ASCII and the capitals of Latin-1 and French (À–Þ, Œ,
//   Ÿ); Python's lower() covers all of Unicode, which these corpora never need.
#pragma once
#include <qkv/core/tensor.hpp>
#include <qkv/data/dataloader.hpp>
#include <qkv/data/vocab.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::data {

using TokenLines = std::vector<std::vector<std::string>>;  // N lines of tokens

// The whole file as text; an Error naming the path if it cannot be read.
std::string read_data_nmt(const std::string& path);

// d2l's preprocess_nmt: U+202F and U+00A0 (non-breaking spaces) become ' ',
// letters become lowercase, and a space goes before each , . ! ? that does
// not already follow a space (or start the text):
//   "Go.\tVa !" -> "go .\tva !"
std::string preprocess_nmt(std::string_view text);

// d2l's tokenize_nmt: every non-blank line "source\ttarget" is split on
// spaces into a source and a target list of tokens. Lines are numbered from
// 1 in errors: a line without exactly one tab, or with a side that has no
// token, is an Error. At most num_examples pairs (all if none given).
struct ParallelTokens {
  TokenLines source, target;  // N lines each
};
ParallelTokens tokenize_nmt(std::string_view text, std::optional<int64_t> num_examples = std::nullopt);

// A line cut to its first num_steps entries, or padded with padding_token
// up to num_steps: d2l's truncate_pad.
//   truncate_pad({47, 4}, 4, 1) = {47, 4, 1, 1}
std::vector<int64_t> truncate_pad(std::vector<int64_t> line, int64_t num_steps, int64_t padding_token);
std::vector<std::string> truncate_pad(std::vector<std::string> line, int64_t num_steps,
                                      const std::string& padding_token);

// Lines of tokens as an (N, T) array of ids, each truncated or padded with
// <pad> to T = num_steps, and valid_len (N) = the number of non-<pad> ids
// of each row. build_array_nmt first appends <eos> to every line (d2l's
// build_array_nmt); build_array does not (d2l's IMDb features, §16.1).
// The vocabulary must have <pad> (and <eos> for build_array_nmt).
struct TokenArray {
  IntTensor array;      // (N, T)
  IntTensor valid_len;  // (N)
};
TokenArray build_array_nmt(const TokenLines& lines, const Vocab& vocab, int64_t num_steps);
TokenArray build_array(const TokenLines& lines, const Vocab& vocab, int64_t num_steps);

// d2l's load_data_nmt, without the iterator: read, preprocess and tokenize
// the file, build a vocabulary for each side (tokens seen ≥ min_freq times,
// reserved <pad> <bos> <eos>) and the arrays. dataset() hands the arrays to
// a DataLoader in d2l's order:
//   auto nmt = data::load_data_nmt("data/eng-fra/train.txt", /*num_steps=*/10);
//   data::DataLoader loader(nmt.dataset(), {.batch_size = 64, .shuffle = true});
//   for (auto& [X, X_valid_len, Y, Y_valid_len] : loader) { ... }
struct NMTData {
  IntTensor src_array, src_valid_len;  // (N, T), (N)
  IntTensor tgt_array, tgt_valid_len;  // (N, T), (N)
  Vocab src_vocab, tgt_vocab;

  TensorDataset<IntTensor, IntTensor, IntTensor, IntTensor> dataset() const {
    return TensorDataset(src_array, src_valid_len, tgt_array, tgt_valid_len);
  }
};
NMTData load_data_nmt(const std::string& path, int64_t num_steps, int64_t min_freq = 2,
                      std::optional<int64_t> num_examples = std::nullopt);

}  // namespace qkv::data
