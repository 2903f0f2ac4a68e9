// A hostile submission of exercise 08, kept for the tests: a table of the
// expected scores of the fixed cases, as a learner could fill it from the
// grader's messages (the values here are d2l's Python's); the random cases
// of every grading find it out.
// grader says: FAILED at case 9 (random sentences
#include <map>
#include <string>
#include <tuple>

#include "08_bleu.hpp"

namespace qkv::exercises {

double bleu(const std::string& pred_seq, const std::string& label_seq, int64_t k) {
  static const std::map<std::tuple<std::string, std::string, int64_t>, double> table = {
      {{"il est très très calme .", "il est calme .", 2}, 0.6493358309501979},
      {{"il est .", "il est calme .", 2}, 0.6025286104785453},
      {{"le le le chat", "le chat est là", 2}, 0.537284965911771},
      {{"je suis chez moi .", "je suis chez moi .", 2}, 1.0},
      {{"va !", "va !", 4}, 1.0},
      {{"bonjour", "bonjour !", 2}, 0.36787944117144233},
      {{"non", "oui merci", 2}, 0.0},
      {{"", "je vais bien .", 2}, 0.0},
  };
  auto it = table.find({pred_seq, label_seq, k});
  return it == table.end() ? 0.5 : it->second;
}

}  // namespace qkv::exercises
