// The engine every other layer stands on: #include <qkv/core.hpp>.
// Tensor and Shape, the factories and the random Generator, autograd's graph
// and backward(), the gradient checker, printing, qkv::Error, and StateDict.
#pragma once
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/core/format.hpp>
#include <qkv/core/generator.hpp>
#include <qkv/core/gradcheck.hpp>
#include <qkv/core/shape.hpp>
#include <qkv/core/state_dict.hpp>
#include <qkv/core/tensor.hpp>
#include <qkv/core/threads.hpp>
