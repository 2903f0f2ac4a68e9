// The qkv::data example for README.md, compiled and run as written there
// except for the corpus path (tests must not depend on data/).
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include "datasets/fixtures.hpp"

using namespace qkv;

TEST_CASE("data/readme example") {
  const std::string path = test::fixture("eng-fra.txt");  // README: "data/eng-fra/train.txt"
  int64_t seen = 0;
  // --- as in README.md ---
  auto nmt = data::load_data_nmt(path, /*num_steps=*/10);  // min_freq 2; <pad> <bos> <eos> reserved
  fmt::print("{} pairs; vocabularies of {} and {} tokens\n", nmt.src_array.size(0), nmt.src_vocab.size(),
             nmt.tgt_vocab.size());

  Generator gen(0);
  data::DataLoader loader(nmt.dataset(), {.batch_size = 4, .shuffle = true}, gen);
  for (auto& [X, X_valid_len, Y, Y_valid_len] : loader) {  // (B, T), (B), (B, T), (B)
    fmt::print("X {} Y {} valid lengths {} {}\n", X.shape(), Y.shape(), X_valid_len, Y_valid_len);
    seen += X.size(0);  // (not in README)
  }
  fmt::print("bleu {:.3f}\n", data::bleu("il est riche .", "il est calme .", 2));  // bleu 0.658
  // --- end ---
  CHECK(seen == nmt.src_array.size(0));
}
