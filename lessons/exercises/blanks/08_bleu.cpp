// Exercise 08 · BLEU with its brevity penalty (d2l)
//
// Lesson 08 (lessons/08_seq2seq_attention.cpp); the notes: 003 带有注意力机制的seq2seq模型
// (the BLEU scores of its translations).
//
// BLEU says how close a predicted translation is to its label:
//   BLEU = exp(min(0, 1 - len_label / len_pred)) · Π_{n=1..min(k, len_pred)} p_n^(1/2^n)
// p_n is the n-gram precision: how many of the prediction's len_pred - n + 1
// n-grams occur in the label, each label n-gram matched at most as many times
// as it occurs there (so "the the the" does not match "the cat" three times).
// The first factor, the brevity penalty, punishes a prediction shorter than
// the label; the exponents 1/2^n let longer matching n-grams count for more.
// Split both strings on single spaces, as Python's str.split(' ') does ("" is
// one empty token). (qkv has this as qkv::data::bleu: write your own.)
//
// Write bleu below:
//   pred_seq, label_seq (tokens separated by spaces), k -> the score in [0, 1]
//
// Not allowed: qkv::data::bleu (the grader checks what your file calls).
//
// Grade it: ./qkv.sh exercise 8        a hint: ./qkv.sh exercise 8 --hint
#include "08_bleu.hpp"

namespace qkv::exercises {

double bleu(const std::string& pred_seq, const std::string& label_seq, int64_t k) {
  not_written_yet("bleu", pred_seq, label_seq, k);
}

}  // namespace qkv::exercises
