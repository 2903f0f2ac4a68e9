// A hostile submission of exercise 01, kept for the tests: it throws an int,
// not a std::exception.
// grader says: your code threw int
#include "01_nadaraya_watson.hpp"

namespace qkv::exercises {

NadarayaWatson nadaraya_watson(const Tensor& /*queries*/, const Tensor& /*keys*/, const Tensor& /*values*/) {
  throw 42;
}

}  // namespace qkv::exercises
