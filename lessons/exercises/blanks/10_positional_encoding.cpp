// Exercise 10 · the sinusoidal positional encoding matrix
//
// Lesson 10 (lessons/10_positional_encoding.cpp); the notes: 001 自注意力
// (位置编码矩阵); 004 2.2 (位置编码).
//
// Self-attention treats its input as a set: shuffle the positions and each
// output moves with its input, unchanged. The Transformer adds to each
// position i a fixed vector that says where it is: row i of
//   P[i, 2j]   = sin(i / 10000^(2j/H))
//   P[i, 2j+1] = cos(i / 10000^(2j/H))          i = 0 … max_len-1, j = 0 … H/2-1
// Each pair of columns (2j, 2j+1) is one frequency, from 1 (columns 0, 1:
// fast) down to nearly 1/10000 (the last pair: slow), like the bits of a
// binary counter. H is even.
// (qkv's nn::PositionalEncoding holds this table as its P.)
//
// Write positional_encoding below:
//   max_len, num_hiddens (H) -> P (max_len, H)
//
// Not allowed: nn::PositionalEncoding (the grader checks what your file calls).
//
// Grade it: ./qkv.sh exercise 10       a hint: ./qkv.sh exercise 10 --hint
#include "10_positional_encoding.hpp"

namespace qkv::exercises {

Tensor positional_encoding(int64_t max_len, int64_t num_hiddens) {
  not_written_yet("positional_encoding", max_len, num_hiddens);
}

}  // namespace qkv::exercises
