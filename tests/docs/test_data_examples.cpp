// The example of docs/data.md, compiled and run as written there, on the
// corpus it names; only the CHECKs are added.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include "docs/in_directory.hpp"

using namespace qkv;

TEST_CASE("docs/data: example") {
  test::InDirectory repository(QKV_SOURCE_DIR);  // the example reads data/eng-fra/train.txt
  // --- as in docs/data.md ---
  auto nmt = data::load_data_nmt("data/eng-fra/train.txt", /*num_steps=*/10);  // min_freq 2; <pad> <bos> <eos> reserved
  fmt::print("{} pairs; vocabularies of {} and {} tokens\n", nmt.src_array.size(0), nmt.src_vocab.size(),
             nmt.tgt_vocab.size());

  Generator gen(0);
  data::DataLoader loader(nmt.dataset(), {.batch_size = 4, .shuffle = true}, gen);
  for (auto& [X, X_valid_len, Y, Y_valid_len] : loader) {  // (B, T), (B), (B, T), (B)
    fmt::print("X {} Y {} valid lengths {} {}\n", X.shape(), Y.shape(), X_valid_len, Y_valid_len);
  }
  fmt::print("bleu {:.3f}\n", data::bleu("il est riche .", "il est calme .", 2));  // bleu 0.658
  // --- end ---
  CHECK(nmt.src_array.size(0) == 1772);  // data/README.md: 1,772 training pairs
  CHECK(nmt.src_array.size(1) == 10);
  int64_t seen = 0;
  for (auto& [X, X_valid_len, Y, Y_valid_len] : loader) seen += X.size(0);
  CHECK(seen == 1772);
  // By hand (d2l's BLEU, k = 2): equal lengths, so no brevity penalty; unigrams
  // 3 of 4 match, bigrams 1 of 3 ("il est"): (3/4)^(1/2) · (1/3)^(1/4) = 0.866 · 0.760 = 0.658.
  CHECK(data::bleu("il est riche .", "il est calme .", 2) == doctest::Approx(0.658).epsilon(1e-3));
}
