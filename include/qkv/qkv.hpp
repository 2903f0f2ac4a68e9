// qkv: a small deep-learning framework that teaches attention.
// One include for everything public: #include <qkv/qkv.hpp>
#pragma once
#include <qkv/autograd.hpp>
#include <qkv/data.hpp>
#include <qkv/error.hpp>
#include <qkv/factory.hpp>
#include <qkv/format.hpp>
#include <qkv/generator.hpp>
#include <qkv/gradcheck.hpp>
#include <qkv/io.hpp>
#include <qkv/nn.hpp>
#include <qkv/ops.hpp>
#include <qkv/optim.hpp>
#include <qkv/shape.hpp>
#include <qkv/tensor.hpp>
