// Every layer: #include <qkv/nn.hpp> (also included by <qkv/qkv.hpp>).
#pragma once
#include <qkv/nn/attention.hpp>
#include <qkv/nn/conv.hpp>
#include <qkv/nn/dropout.hpp>
#include <qkv/nn/embedding.hpp>
#include <qkv/nn/encoder_decoder.hpp>
#include <qkv/nn/init.hpp>
#include <qkv/nn/layer_norm.hpp>
#include <qkv/nn/linear.hpp>
#include <qkv/nn/loss.hpp>
#include <qkv/nn/module.hpp>
#include <qkv/nn/rnn.hpp>
#include <qkv/nn/seq2seq.hpp>
#include <qkv/nn/transformer.hpp>
