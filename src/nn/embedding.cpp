// nn::Embedding on the embedding op (a row lookup whose gradient adds into
// the rows that were picked: an id used twice gets both contributions).
#include <qkv/core/error.hpp>
#include <qkv/nn/embedding.hpp>
#include <qkv/nn/init.hpp>
#include <qkv/ops/shape_ops.hpp>

namespace qkv::nn {

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& gen)
    : num_embeddings(num_embeddings), embedding_dim(embedding_dim) {
  if (num_embeddings <= 0 || embedding_dim <= 0)
    fail("Embedding: num_embeddings {} and embedding_dim {} must be positive", num_embeddings, embedding_dim);
  Tensor w = Tensor::empty({num_embeddings, embedding_dim}, "Embedding");
  init::normal_(w, 0, 1, gen);  // PyTorch's default: N(0, 1)
  register_parameter("weight", weight, w);
}

Tensor Embedding::forward(const IntTensor& ids) const {
  TraceScope trace(*this, {ids});
  if (!ids.defined()) fail("Embedding: ids is an undefined IntTensor");
  // The op checks every id against the weight's rows (num_embeddings) and names the id.
  return trace.output(embedding(ids, weight));  // (…) -> (…, D)
}

std::string Embedding::extra_repr() const { return fmt::format("{}, {}", num_embeddings, embedding_dim); }

}  // namespace qkv::nn
