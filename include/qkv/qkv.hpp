// qkv: a small deep-learning framework that teaches attention.
// One include for everything public: #include <qkv/qkv.hpp>
//
// The layers, each built only on the ones below it:
//   core    Tensor, autograd, factories, Generator, gradcheck, printing
//   ops     the functional ops, each forward with its backward beside it
//   nn      Module and the layers;  optim  the optimizers;  data  corpora and batches
//   io      checkpoints (reads nn modules and optimizers: the one sideways arrow)
//   viz     pictures of tensors: heatmaps, line plots, the autograd graph (reads core only)
#pragma once
#include <qkv/core.hpp>
#include <qkv/data.hpp>
#include <qkv/io.hpp>
#include <qkv/nn.hpp>
#include <qkv/ops.hpp>
#include <qkv/optim.hpp>
#include <qkv/viz.hpp>
