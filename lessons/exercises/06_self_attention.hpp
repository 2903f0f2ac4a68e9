// Exercise 06 · single-head self-attention (document 002): the module the
// learner's file, its solution and the grader share. The learner writes its forward.
#pragma once
#include <memory>

#include "exercise.hpp"

namespace qkv::exercises {

struct SelfAttentionSteps {
  Tensor scores;  // (B, T, T): Q Kᵀ
  Tensor probs;   // (B, T, T): softmax of each query's row of scores (the notes' Score2Prob)
  Tensor output;  // (B, T, D): probs V
};

// The notes' SelfAttention (document 002, lesson 07): three Linear(D, D) make
// Q, K and V from the same sentences.
class SelfAttention : public nn::Module {
 public:
  SelfAttention(int64_t vec_size, Generator& gen) {
    QueryW = register_module("QueryW", std::make_shared<nn::Linear>(vec_size, vec_size, true, gen));
    KeyW = register_module("KeyW", std::make_shared<nn::Linear>(vec_size, vec_size, true, gen));
    ValueW = register_module("ValueW", std::make_shared<nn::Linear>(vec_size, vec_size, true, gen));
  }
  // sents (B, T, D) -> scores (B, T, T), probs (B, T, T), output (B, T, D)
  SelfAttentionSteps forward(const Tensor& sents) const;

  std::shared_ptr<nn::Linear> QueryW, KeyW, ValueW;
  std::string type_name() const override { return "SelfAttention"; }
};

}  // namespace qkv::exercises
