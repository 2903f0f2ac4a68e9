// Every layer: #include <qkv/nn.hpp> (also included by <qkv/qkv.hpp>).
#pragma once
#include <qkv/nn/init.hpp>
#include <qkv/nn/linear.hpp>
#include <qkv/nn/module.hpp>
