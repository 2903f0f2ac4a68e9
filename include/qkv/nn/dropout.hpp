// nn::Dropout: in training, zero each element with probability p and scale
// the survivors by 1/(1-p) (so the expected value is unchanged); in
// evaluation, the identity. PyTorch's layer; d2l 5.6.
//   x (any shape) -> same shape.
// The mode is the module's: model.train() / model.eval() switch it.
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/nn/module.hpp>

namespace qkv::nn {

class Dropout : public Module {
 public:
  // NOTE: the layer keeps a pointer to `gen` and draws its masks from it at
  // every forward, so the generator must outlive the layer (the default
  // generator always does).
  explicit Dropout(float p = 0.5f, Generator& gen = default_generator());
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

  float p;

  std::string type_name() const override { return "Dropout"; }
  std::string extra_repr() const override;  // "p=0.5, inplace=False"

 private:
  Generator* gen_;
};

}  // namespace qkv::nn
