// Checkpoints: a model's parameters, and optionally its optimizer's state,
// in one safetensors file (io/safetensors.hpp), so training can stop and
// resume exactly where it was.
//
//   io::save_checkpoint("model.safetensors", model, &opt);   // every few epochs
//   …
//   io::load_checkpoint("model.safetensors", model, &opt);   // a fresh process: same numbers
//
// The file's keys are the model's state_dict() names as they are
// ("encoder.layers.0.attention.W_q.weight"), and the optimizer's
// state_dict() names under "optimizer." ("optimizer.Adam.lr",
// "optimizer.state.3.exp_avg"). So a checkpoint saved without an optimizer is
// a plain weights file that PyTorch's safetensors.torch.load_file reads into
// a state dict for a module with the same parameter names, and
// load_checkpoint(path, model) reads the weights of either kind.
//
// Loading is all or nothing: the file is read and checked whole, then the
// model's names and shapes and the optimizer's state are checked, and only
// then is anything written. A damaged file, a checkpoint of another model or
// of another optimizer throws qkv::Error and leaves model and optimizer as
// they were. Saving is atomic (save_safetensors): a failed save leaves the
// previous checkpoint in place.
#pragma once
#include <qkv/nn/module.hpp>
#include <qkv/optim/optimizer.hpp>

#include <filesystem>

namespace qkv::io {

// The metadata is {"format": "pt"} (Hugging Face's mark for PyTorch tensors),
// and {"optimizer": "<type name>"} when an optimizer is saved.
void save_checkpoint(const std::filesystem::path& path, const nn::Module& model,
                     const optim::Optimizer* optimizer = nullptr);

// Without an optimizer, the file's optimizer state (if any) is ignored; with
// one, the file must hold that optimizer's state.
void load_checkpoint(const std::filesystem::path& path, nn::Module& model, optim::Optimizer* optimizer = nullptr);

}  // namespace qkv::io
