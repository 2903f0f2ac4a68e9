// Every functional op: #include <qkv/ops.hpp>.
#pragma once
#include <qkv/ops/attention.hpp>
#include <qkv/ops/broadcast.hpp>
#include <qkv/ops/compare.hpp>
#include <qkv/ops/conv.hpp>
#include <qkv/ops/elementwise.hpp>
#include <qkv/ops/functional.hpp>
#include <qkv/ops/linalg.hpp>
#include <qkv/ops/reduction.hpp>
#include <qkv/ops/shape_ops.hpp>
#include <qkv/ops/softmax.hpp>
