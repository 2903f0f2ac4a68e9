// Exercise 13 · the online softmax of a row read in blocks: the declaration
// the learner's file, its solution and the grader share.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "exercise.hpp"

namespace qkv::exercises {

// The softmax of a row, and the state the online softmax kept on its way.
struct OnlineSoftmax {
  std::vector<float> y;  // (n): softmax(x), summing to 1
  std::vector<float> m;  // (blocks): the running maximum after each block
  std::vector<float> l;  // (blocks): the running sum Σⱼ exp(xⱼ - m) over the values read so far, after each block
};

// x (n ≥ 1), read a block at a time: x[0:block], x[block:2·block], …, the
// last block shorter when block does not divide n (and the only one when
// block ≥ n) -> y = softmax(x), with m and l after each of the ⌈n/block⌉ blocks.
OnlineSoftmax online_softmax(std::span<const float> x, int64_t block);

}  // namespace qkv::exercises
