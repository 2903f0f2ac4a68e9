// The optimizers and gradient clipping: #include <qkv/optim.hpp> (also in <qkv/qkv.hpp>).
#pragma once
#include <qkv/optim/adam.hpp>
#include <qkv/optim/clip_grad.hpp>
#include <qkv/optim/optimizer.hpp>
#include <qkv/optim/sgd.hpp>
