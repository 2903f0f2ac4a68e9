// A wrong solution of exercise 07, kept for the tests: the GRU input joined as [x ; context].
// grader says: the GRU input joined in the wrong order
#include "07_bahdanau_step.hpp"

namespace qkv::exercises {

DecoderStep bahdanau_step(nn::AdditiveAttention& attention, const Tensor& hidden, const Tensor& enc_outputs,
                          const IntTensor& enc_valid_lens, const Tensor& x) {
  const int64_t L = hidden.size(0);
  Tensor query = hidden.slice(0, L - 1, L).squeeze(0).unsqueeze(1);
  Tensor context = attention(query, enc_outputs, enc_outputs, enc_valid_lens);
  Tensor rnn_input = cat({x.unsqueeze(1), context}, -1);  // wrong: embedding first
  return {query, context, rnn_input};
}

}  // namespace qkv::exercises
