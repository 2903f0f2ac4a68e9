// Exercise 08, hostile: no BLEU at all. The file defines the library's own
// qkv::data::bleu, from which the grader's expected scores come, so that
// both sides agree (0.5, whatever the sentences).
// grader says: your file defines qkv::data::bleu(std::basic_string_view
// grader says: a function of the library
// grader says: FAILED before the first case, the rules: your file defines qkv::data::bleu, a function of the library
#include "08_bleu.hpp"

#include <string_view>

namespace qkv::data {
double bleu(std::string_view pred_seq, std::string_view label_seq, int64_t k) {
  (void)pred_seq, (void)label_seq, (void)k;
  return 0.5;
}
}  // namespace qkv::data

namespace qkv::exercises {
double bleu(const std::string& pred_seq, const std::string& label_seq, int64_t k) {
  return data::bleu(pred_seq, label_seq, k);
}
}  // namespace qkv::exercises
