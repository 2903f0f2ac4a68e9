// A wrong solution of exercise 07, kept for the tests: the query taken from the first GRU layer,
// hidden[0].
// grader says: the first layer's hidden state as the query
#include "07_bahdanau_step.hpp"

namespace qkv::exercises {

DecoderStep bahdanau_step(nn::AdditiveAttention& attention, const Tensor& hidden, const Tensor& enc_outputs,
                          const IntTensor& enc_valid_lens, const Tensor& x) {
  const int64_t L = hidden.size(0);
  (void)L;
  Tensor query = hidden.slice(0, 0, 1).squeeze(0).unsqueeze(1);  // wrong: layer 0
  Tensor context = attention(query, enc_outputs, enc_outputs, enc_valid_lens);
  Tensor rnn_input = cat({context, x.unsqueeze(1)}, -1);
  return {query, context, rnn_input};
}

}  // namespace qkv::exercises
