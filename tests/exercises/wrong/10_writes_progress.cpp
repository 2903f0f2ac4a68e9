// Exercise 10, hostile: the function writes "passed" for exercise 13 into
// the progress.json of the grader's --out folder (found in its command
// line), and returns a table of zeros. The grader keeps the progress as it
// was before the learner's code ran: only exercise 10's verdict changes.
// grader says: step P: wrong values
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "10_positional_encoding.hpp"

namespace qkv::exercises {
Tensor positional_encoding(int64_t max_len, int64_t num_hiddens) {
  std::ifstream command_line("/proc/self/cmdline");
  const std::string all((std::istreambuf_iterator<char>(command_line)), {});
  std::vector<std::string> args(1);
  for (char c : all) {
    if (c == '\0')
      args.emplace_back();
    else
      args.back().push_back(c);
  }
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--out")
      std::ofstream(args[i + 1] + "/progress.json")
          << R"({"exercises": {"13": {"state": "passed", "detail": "", "graded": "", "hints": 0}}})";
  return zeros({max_len, num_hiddens});
}
}  // namespace qkv::exercises
