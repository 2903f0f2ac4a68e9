// The bad-input table of tests/hardening: rows of {description, call,
// fragment}, each run as its own SUBCASE that expects the call to throw a
// qkv::Error whose message contains the fragment. A crash, a different
// exception or a call that returns fails the row.
#pragma once
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <cctype>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace qkv::test {

// The extreme values the tables feed in, for `using namespace qkv::test::extremes`.
namespace extremes {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t k2to62 = int64_t{1} << 62;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
}  // namespace extremes

struct BadInput {
  std::string description;     // what is wrong with the input
  std::function<void()> call;  // the call that must throw
  std::string fragment;        // part of the qkv::Error message it must give
};

inline void check_bad_inputs(const std::vector<BadInput>& rows) {
  for (const BadInput& row : rows) {
    SUBCASE(row.description.c_str()) {
      CHECK_THROWS_WITH_AS(row.call(), doctest::Contains(row.fragment.c_str()), Error);
    }
  }
}

// The name a row's description or an error message begins with, for
// comparing: its first word (up to ' ', ',', '(' or a ':' that is not half
// of a "::"), in lower case and without '_', so that a layer and the op it
// is built on count as one name (Linear and linear, LayerNorm and
// layer_norm).
inline std::string first_name(const std::string& text) {
  size_t end = 0;
  while (end < text.size() && text[end] != ' ' && text[end] != ',' && text[end] != '(') {
    if (text.compare(end, 2, "::") == 0)
      end += 2;
    else if (text[end] == ':')
      break;
    else
      ++end;
  }
  std::string out;
  for (char c : text.substr(0, end))
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whether a message's first name is the op or layer a row describes. A row
// about a method, "Class::method", may be named by the whole, the method
// ("Tensor::size" -> "size: …") or the class ("ModuleList::at" ->
// "ModuleList: …").
inline bool names_the_op(const std::string& message, const std::string& description) {
  const std::string said = first_name(message), row = first_name(description);
  const size_t colons = row.find("::");
  if (said == row || colons == std::string::npos) return said == row;
  return said == row.substr(0, colons) || said == row.substr(colons + 2);
}

// check_bad_inputs, and each message must begin with the name of the op (or
// layer) the row's description begins with: a message that names only a
// helper ("shape (…): the number of elements overflows", "empty: …") tells
// the user nothing about which of their calls failed.
inline void check_bad_inputs_naming_op(const std::vector<BadInput>& rows) {
  for (const BadInput& row : rows) {
    SUBCASE(row.description.c_str()) {
      CHECK_THROWS_WITH_AS(row.call(), doctest::Contains(row.fragment.c_str()), Error);
      try {
        row.call();
      } catch (const Error& e) {
        const std::string message = e.what();
        CAPTURE(message);
        CHECK(names_the_op(message, row.description));
      } catch (...) {  // reported above
      }
    }
  }
}

// Under AddressSanitizer an allocation larger than its own limit (1 TiB)
// aborts the process instead of throwing std::bad_alloc, unless the run sets
// ASAN_OPTIONS=allocator_may_return_null=1; rows that need a real failed
// allocation are left out there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// Whether asking for terabytes fails at the request, so a test may make one:
// not under AddressSanitizer (above), and not when the kernel overcommits
// without limit (vm.overcommit_memory = 1), where the request succeeds and
// zeroing the storage would exhaust the machine instead. Linux's default
// heuristic (0) and strict accounting (2) refuse a request larger than RAM
// and swap.
inline bool huge_allocations_fail() {
  if (kAddressSanitizer) return false;
  std::ifstream mode("/proc/sys/vm/overcommit_memory");
  int value = -1;
  return mode >> value && (value == 0 || value == 2);
}

}  // namespace qkv::test
