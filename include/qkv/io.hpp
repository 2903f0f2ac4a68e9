// Saving and loading weights (safetensors): #include <qkv/io.hpp> (also in <qkv/qkv.hpp>).
#pragma once
#include <qkv/io/checkpoint.hpp>
#include <qkv/io/safetensors.hpp>
