// What every exercise file shares: qkv's public API, and the one call a
// blank makes.
//
// A blank's body is `not_written_yet("nadaraya_watson", queries, keys, values);`:
// it compiles, and grading it says the function is not written yet instead
// of crashing. Write the body in its place (and delete the call).
#pragma once
#include <qkv/qkv.hpp>

#include <string>

namespace qkv::exercises {

// Thrown by a blank's body; the grader reports "not written yet" for it.
struct NotWrittenYet : Error {
  explicit NotWrittenYet(const std::string& name)
      : Error(name + " is not written yet: write its body in place of not_written_yet(…)"), function(name) {}
  std::string function;
};

// The blank's arguments are passed only so that the compiler does not warn
// that they are unused.
template <class... Unused>
[[noreturn]] void not_written_yet(const std::string& function, const Unused&... /*arguments*/) {
  throw NotWrittenYet(function);
}

}  // namespace qkv::exercises
