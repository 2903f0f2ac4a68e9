// The exit status of a grading: what `./qkv.sh exercise N`, scripts and the
// tests read. A header of its own, with no includes, so that a test can
// name the statuses without the grader.
#pragma once

namespace qkv::exercises {

enum class Status : int {
  passed = 0,
  failing = 1,        // a check failed, or the learner's code crashed, hung, threw or broke a rule
  bad_flag = 2,       // nothing graded
  not_written = 3,    // the blank's not_written_yet(…) is still there
  grader_failed = 4,  // the grader itself (its file of PyTorch's values missing, say; named on stderr)
};

}  // namespace qkv::exercises
