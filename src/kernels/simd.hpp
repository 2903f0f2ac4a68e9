// The one way kernels reach xsimd: the include, and the register type.
// Private to src/kernels/, and bench/bench.cpp, whose FMA peak loop runs on
// this register type; nothing else includes it.
#pragma once

// NOTE: GCC 12's AVX-512 headers trip a false "used uninitialized" warning
// wherever their intrinsics get inlined (GCC bug 105593); hush it for xsimd only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <xsimd/xsimd.hpp>
#pragma GCC diagnostic pop

#include <cstdint>

namespace qkv::kernels {

// One SIMD register of floats, as wide as the build's -march allows
// (8 for AVX2, 16 for AVX-512, 4 for SSE).
using batch = xsimd::batch<float>;
constexpr int64_t W = batch::size;  // floats per register

}  // namespace qkv::kernels
