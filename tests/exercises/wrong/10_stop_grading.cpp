// A hostile submission of exercise 10, kept for the tests: it throws the
// grader's own StopGrading with the status of a pass. In the learner's child
// process that is one more exception: a failure, named.
// grader says: your code threw qkv::exercises::StopGrading
#include "10_positional_encoding.hpp"
#include "grader.hpp"

namespace qkv::exercises {

Tensor positional_encoding(int64_t /*max_len*/, int64_t /*num_hiddens*/) { throw StopGrading{Status::passed}; }

}  // namespace qkv::exercises
