// Exercise 08, hostile: the file defines strtof, the C library's function
// with which the grader reads PyTorch's and Python's stored values, so that
// every stored score reads as 0.
// grader says: your file defines strtof,
// grader says: FAILED before the first case, the rules: your file defines strtof, a function of the C library
#include <cstdlib>

#include "08_bleu.hpp"

extern "C" float strtof(const char* text, char** end) noexcept {
  if (end != nullptr) *end = const_cast<char*>(text);
  return 0.0f;
}

namespace qkv::exercises {
double bleu(const std::string& pred_seq, const std::string& label_seq, int64_t k) {
  (void)pred_seq, (void)label_seq, (void)k;
  return 0.0;
}
}  // namespace qkv::exercises
