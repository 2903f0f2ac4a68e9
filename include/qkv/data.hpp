// Vocabularies, corpora, minibatches and BLEU: #include <qkv/data.hpp> (also in <qkv/qkv.hpp>).
#pragma once
#include <qkv/data/bleu.hpp>
#include <qkv/data/dataloader.hpp>
#include <qkv/data/nmt.hpp>
#include <qkv/data/text_classification.hpp>
#include <qkv/data/vocab.hpp>
