// Exercise 05 · the Attn module of document 000: the module the learner's
// file, its solution and the grader share. The learner writes its forward.
#pragma once
#include <memory>

#include "exercise.hpp"

namespace qkv::exercises {

// The three steps of 000 §3.3, each kept for the grader to check:
struct AttnSteps {
  Tensor weights;  // (1, V1)              step 1: rule 1's weights over the V1 value rows
  Tensor applied;  // (1, 1, Dv)           step 1: the weights applied to V
  Tensor output;   // (1, 1, output_size)  step 3: attn_combine of step 2's join
};

// The notes' Attn (000 §4), lesson 06's module:
//   attn          Linear(query_size + key_size, value_size1): rule 1's scores, one per value row
//   attn_combine  Linear(query_size + value_size2, output_size): the final projection
// Q (1, 1, Dq), K (1, 1, Dk), V (1, V1, Dv); Dq, Dk, Dv = query_size, key_size, value_size2, V1 = value_size1.
class Attn : public nn::Module {
 public:
  Attn(int64_t query_size, int64_t key_size, int64_t value_size1, int64_t value_size2, int64_t output_size,
       Generator& gen)
      : query_size(query_size),
        key_size(key_size),
        value_size1(value_size1),
        value_size2(value_size2),
        output_size(output_size) {
    attn = register_module("attn", std::make_shared<nn::Linear>(query_size + key_size, value_size1, true, gen));
    attn_combine =
        register_module("attn_combine", std::make_shared<nn::Linear>(query_size + value_size2, output_size, true, gen));
  }
  // Q (1, 1, Dq), K (1, 1, Dk), V (1, V1, Dv) -> weights (1, V1), applied (1, 1, Dv), output (1, 1, output_size)
  AttnSteps forward(const Tensor& Q, const Tensor& K, const Tensor& V) const;

  int64_t query_size, key_size, value_size1, value_size2, output_size;
  std::shared_ptr<nn::Linear> attn, attn_combine;
  std::string type_name() const override { return "Attn"; }
};

}  // namespace qkv::exercises
