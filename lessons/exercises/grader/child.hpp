// The learner's code runs in a child process; the grader, in the parent,
// reads what it returned and alone decides the verdict.
//
// Every call of the learner's code (Grader::call and the gradient checks) is
// a fork(). The child runs the call under limits and writes its result, as
// bytes, on a pipe; the parent reads them with a wall-clock deadline, keeps
// the first few kilobytes of what the child printed, and turns each way a
// child can end into one Ending:
//
//   returned       the result is on the pipe (the only ending that can pass)
//   not_written    a blank's not_written_yet(…)
//   threw          an exception: its type and message (any type: a std::exception, an int, …)
//   out_of_memory  std::bad_alloc, or an allocation refused under the memory limit
//   exited         exit(), quick_exit() or _exit() before returning
//   crashed        a signal: SIGSEGV, SIGABRT, SIGFPE, …
//   timed_out      past the wall-clock limit (or the CPU limit behind it): killed
//   flooded        printed past the output limit: killed
//   garbled        ended with a result the parent cannot read (something else wrote on its pipe)
//
// What leaves the child is data only: the parent compares it with values it
// computed itself, so nothing the learner's code throws, returns or writes
// can make the parent say PASSED. The child is its own process group, and the
// whole group is killed when the call is over (a process the learner's code
// started does not outlive it).
//
// Limits (ChildLimits): the wall clock is measured by the parent on every
// system. The memory limit is RLIMIT_AS, which Linux enforces and macOS does
// not; under AddressSanitizer (whose shadow memory needs terabytes of address
// space) it is not set.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace qkv::exercises {

struct ChildLimits {
  double seconds = 10.0;                      // wall clock, per call
  uint64_t memory_bytes = uint64_t{4} << 30;  // address space of the child (see above)
  size_t shown_bytes = 4000;                  // of what the learner prints, per call, this much is shown
  size_t max_output_bytes = size_t{8} << 20;  // past this the child is stopped
};

enum class Ending { returned, not_written, threw, out_of_memory, exited, crashed, timed_out, flooded, garbled };

struct ChildOutcome {
  Ending ending = Ending::garbled;
  std::string result;   // returned: the encoded result; not_written: the function; threw: the message
  std::string detail;   // threw: the exception's type; exited: "exit status N"; crashed: the signal's name and meaning
  std::string printed;  // the first shown_bytes of what the child printed (stdout and stderr)
  size_t cut_bytes = 0, cut_lines = 0;  // what was printed past shown_bytes, not shown
  size_t printed_bytes = 0;             // all of it
};

// Runs `body` in a child process under `limits`. `body` returns the bytes to
// send back; what it throws becomes the outcome's ending.
ChildOutcome run_in_child(const std::function<std::string()>& body, const ChildLimits& limits);

// --- the bytes a child sends: a flat little format, read back in the same order ---

class Writer {
 public:
  void u64(uint64_t v);
  void f64(double v);
  void text(const std::string& s);
  void floats(const std::vector<float>& v);
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  uint64_t u64();
  double f64();
  std::string text();
  std::vector<float> floats();
  bool done() const { return at_ == bytes_.size(); }

 private:
  void take(void* out, size_t n);  // a qkv::Error if the bytes run out
  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace qkv::exercises
