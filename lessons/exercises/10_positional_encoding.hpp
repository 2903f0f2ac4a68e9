// Exercise 10 · the sinusoidal positional encoding matrix: the declaration
// the learner's file, its solution and the grader share.
#pragma once
#include "exercise.hpp"

namespace qkv::exercises {

// max_len positions, num_hiddens (H, even) features -> P (max_len, H):
//   P[i, 2j] = sin(i / 10000^(2j/H)),   P[i, 2j+1] = cos(i / 10000^(2j/H))
Tensor positional_encoding(int64_t max_len, int64_t num_hiddens);

}  // namespace qkv::exercises
