// Exercise 08 · BLEU with its brevity penalty: the declaration the learner's
// file, its solution and the grader share.
#pragma once
#include <string>

#include "exercise.hpp"

namespace qkv::exercises {

// pred_seq, label_seq: tokens separated by single spaces; k: the longest n-gram counted
//   -> exp(min(0, 1 - len_label / len_pred)) · Π_{n=1..min(k, len_pred)} p_n^(1/2^n)
double bleu(const std::string& pred_seq, const std::string& label_seq, int64_t k);

}  // namespace qkv::exercises
