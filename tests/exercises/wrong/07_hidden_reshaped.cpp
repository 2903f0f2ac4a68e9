// A wrong solution of exercise 07, kept for the tests: the hidden state
// (L, B, H) read as (B, L, H) with a reshape, where the layer must be picked first.
// grader says: a reshape where a transpose belongs
// grader says: its inputs: hidden[1, 0] (the top layer, example 0)
#include "07_bahdanau_step.hpp"

namespace qkv::exercises {

DecoderStep bahdanau_step(nn::AdditiveAttention& attention, const Tensor& hidden, const Tensor& enc_outputs,
                          const IntTensor& enc_valid_lens, const Tensor& x) {
  const int64_t L = hidden.size(0), B = hidden.size(1), H = hidden.size(2);
  Tensor query = hidden.reshape({B, L, H}).narrow(1, L - 1, 1);  // wrong: (L, B, H) is not (B, L, H)
  Tensor context = attention(query, enc_outputs, enc_outputs, enc_valid_lens);
  return {query, context, cat({context, x.unsqueeze(1)}, -1)};
}

}  // namespace qkv::exercises
