// qkv::Error: the one exception qkv throws for bad input.
//
// Every message names the op and the values it got, e.g.
//   matmul: (2, 3) x (4, 5): inner sizes 3 and 4 differ
// so the reader can see what was wrong without a debugger.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace qkv {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throw an Error with a fmt-formatted message: fail("relu: got {}", shape).
template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace qkv
