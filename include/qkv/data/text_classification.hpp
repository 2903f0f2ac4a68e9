// Reading a text-classification corpus (lesson 12; d2l §16.1 reads IMDb
// reviews the same way): one example per line,
//
//   label<TAB>sentence          e.g.  "1\tWhat a lovely film!"
//
// where label is a class id 0, 1, 2, …. Sentences get the same preprocessing
// as the translation corpus (preprocess_nmt: lowercase, a space before
// , . ! ?) and are split on spaces. Then, as d2l does:
//
//   auto train = data::read_text_classification("data/sentiment/train.txt");
//   data::Vocab vocab(train.tokens, /*min_freq=*/1, {"<pad>"});
//   auto [X, valid_len] = data::build_array(train.tokens, vocab, /*num_steps=*/16);  // (N, T), (N)
//   data::DataLoader loader(data::TensorDataset(X, valid_len, train.labels), {.batch_size = 32, .shuffle = true});
//
// Blank lines are skipped; anything else that is not "label<TAB>sentence"
// is an Error naming the file and the line number, and so is a file with no
// example at all.
//
// With num_classes > 0 the classes are fixed: every label must be one of
// 0 … num_classes - 1, and a label outside them is an Error naming the file,
// the line and the label. Read a training and a held-out file this way, with
// the classes the model is built for: without it, num_classes is each file's
// own largest label + 1, and a held-out label the training file never had
// would index past the model's logits.
//   auto test = data::read_text_classification("data/sentiment/test.txt", /*num_classes=*/2);
#pragma once
#include <qkv/core/tensor.hpp>
#include <qkv/data/nmt.hpp>  // TokenLines, build_array

#include <string>

namespace qkv::data {

struct LabeledText {
  TokenLines tokens;        // N sentences, each a list of tokens
  IntTensor labels;         // (N) class ids
  int64_t num_classes = 0;  // the num_classes asked for, or (0) the largest label + 1
};

LabeledText read_text_classification(const std::string& path, int64_t num_classes = 0);

}  // namespace qkv::data
