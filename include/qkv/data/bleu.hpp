// BLEU: how close a predicted translation is to its label (Papineni et al.
// 2002), in d2l's form (§10.7.6, "Evaluation of Predicted Sequences"):
//
//   BLEU = exp(min(0, 1 - len_label / len_pred)) · Π_{n=1..k} p_n^(1/2^n)
//
// p_n is the n-gram precision: the number of n-grams of the prediction that
// also occur in the label (each label n-gram matched at most as many times
// as it occurs there), divided by the number of n-grams of the prediction.
// The first factor, the brevity penalty, punishes predictions shorter than
// the label (a short prediction would otherwise have high precisions); the
// weights 1/2^n let longer matching n-grams count for more.
//
// Both sequences are strings of tokens separated by single spaces, split as
// Python's str.split(' ') does. Edge cases, as d2l:
// - An empty string is one empty token (''.split(' ') == ['']), so len_pred
//   is never 0: an empty prediction scores 0 against a non-empty label.
// - n only goes up to min(k, len_pred): a prediction shorter than k tokens
//   has no longer n-grams, and those precisions are left out.
//
//   bleu("il est calme .", "il est calme .", 2) = 1
//   bleu("il est .", "il est calme .", 2) = exp(1 - 4/3) · (3/3)^(1/2) · (1/2)^(1/4) ≈ 0.6025
#pragma once
#include <cstdint>
#include <string_view>

namespace qkv::data {

double bleu(std::string_view pred_seq, std::string_view label_seq, int64_t k);

}  // namespace qkv::data
