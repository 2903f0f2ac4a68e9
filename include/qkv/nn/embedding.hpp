// nn::Embedding: a table of V learned vectors of size D, looked up by id,
// PyTorch's layer (d2l 10.7: tokens become vectors before an RNN or attention).
//   ids (…) integers in [0, V) -> (…, D); weight (V, D).
// Initialised as PyTorch does: weight ~ N(0, 1).
// Left out on purpose: padding_idx, max_norm, sparse gradients.
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/nn/module.hpp>

namespace qkv::nn {

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& gen = default_generator());
  Tensor forward(const IntTensor& ids) const;
  Tensor operator()(const IntTensor& ids) const { return forward(ids); }

  Tensor weight;  // (num_embeddings, embedding_dim): row v is the vector of id v
  int64_t num_embeddings, embedding_dim;

  std::string type_name() const override { return "Embedding"; }
  std::string extra_repr() const override;  // "10, 4" as PyTorch prints it
};

}  // namespace qkv::nn
