// Exercise 07, a reference solution: one step of the Bahdanau decoder.
#include "07_bahdanau_step.hpp"

namespace qkv::exercises {

DecoderStep bahdanau_step(nn::AdditiveAttention& attention, const Tensor& hidden, const Tensor& enc_outputs,
                          const IntTensor& enc_valid_lens, const Tensor& x) {
  const int64_t L = hidden.size(0);
  Tensor query = hidden.slice(0, L - 1, L).squeeze(0).unsqueeze(1);             // (L, B, H) -> (B, 1, H)
  Tensor context = attention(query, enc_outputs, enc_outputs, enc_valid_lens);  // (B, 1, H)
  Tensor rnn_input = cat({context, x.unsqueeze(1)}, -1);                        // (B, 1, H + E)
  return {query, context, rnn_input};
}

}  // namespace qkv::exercises
