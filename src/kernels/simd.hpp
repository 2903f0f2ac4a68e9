// The one way kernels reach xsimd, and the one place that decides whether
// they do. Private to src/kernels/, and bench/bench.cpp, whose FMA peak loop
// runs on this register type; nothing else includes it.
//
// ---- the two builds: how a kernel file is laid out ---------------------------------
//
// QKV_SIMD (below) is 1, or 0 in the scalar build: CMake's QKV_SCALAR_KERNELS=ON,
// for targets xsimd has no instruction set for, such as WebAssembly. That
// build includes no xsimd. Every kernel file has two sections (softmax.cpp
// is the one to copy):
//
//   // ==== reference ====            always compiled: name_reference, the
//   void softmax_reference(…) {…}     plain loop that defines the kernel, which
//                                     the tests hold the SIMD kernel equal to
//   // ==== SIMD ====
//   #if QKV_SIMD                      the fast kernel under the public name,
//   void softmax(…) {…}               with its helpers and its threads
//   #else                             the scalar build: each public name is
//   void softmax(…) { softmax_reference(…); }   its reference, one call
//   #endif
//
// One `#if QKV_SIMD` a file, and no other test of the build: each kernel is
// written once per kind, the public names exist in every build, and the SIMD
// code in one. A file that is all SIMD is one such block (gemm.cpp, whose
// reference section is gemm_reference.cpp; gemm_edges.cpp); a file with no
// SIMD has none (copy.cpp). Include this header before `#if QKV_SIMD`: the
// library compiles with -Wundef, so a file that forgets is warned (in CI,
// where warnings are errors, it does not build).
// (dropout.cpp is the one kernel defined once for both builds: its SIMD
// section draws on AVX-512 DQ alone, and its #else draws nothing.)
//
// ---- the operations whose meaning must not change -----------------------------------
//
//   fmadd, madd   a·b + c in one rounding wherever the hardware fuses (every
//                 x86 build with FMA, every ARM64 one), in two elsewhere:
//                 the batch and the scalar forms always agree
//   divide        a / b correctly rounded in every lane, as the scalar a / b
//   square_root   √x correctly rounded in every lane, as std::sqrt
//   reduce_add    the sum of a register's lanes
//   aligned_floats  a std::vector of floats at a 64-byte boundary
//
// Every fused multiply-add in the kernels is one of these calls (or an
// intrinsic named in gemm_simd.hpp): the build compiles with
// -ffp-contract=off, so the compiler fuses nothing of its own.
//
// xsimd 8.1 (Debian 12) to 14 are supported (CMakeLists.txt checks the
// range); where they differ, the branch is here.
#pragma once

// CMake defines QKV_SCALAR_KERNELS as 1 or 0 for the library; a program
// that includes this header without it (bench) gets SIMD.
#if QKV_SCALAR_KERNELS
#define QKV_SIMD 0
#else
#define QKV_SIMD 1
#endif

// The scalar build gets madd and aligned_floats alone, which the references use too.
#if QKV_SIMD
// NOTE: GCC 12's AVX-512 headers trip a false "used uninitialized" warning
// wherever their intrinsics get inlined (GCC bug 105593); hush it for xsimd only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <xsimd/xsimd.hpp>
#pragma GCC diagnostic pop
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

namespace qkv::kernels {

// Whether the build's hardware fuses a multiply and an add: FMA3 on x86
// (-march=native on any x86 of the last decade; not the portable x86-64
// baseline), always on ARM64.
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
constexpr bool HAS_FMA = true;
#else
constexpr bool HAS_FMA = false;
#endif

// a·b + c for one float: std::fma (one rounding) where the hardware fuses,
// a product and a sum (two roundings) where it cannot, exactly as fmadd
// below does for a batch. Where a kernel's scalar twin must equal its SIMD
// body bit for bit, both use these.
inline float madd(float a, float b, float c) {
  if constexpr (HAS_FMA) return std::fma(a, b, c);
  return a * b + c;
}

#if QKV_SIMD
// One SIMD register of floats, as wide as the build's instruction set allows
// (16 for AVX-512, 8 for AVX2, 4 for SSE and NEON).
using batch = xsimd::batch<float>;
constexpr int64_t W = batch::size;  // floats per register

// The same for a batch (of floats or doubles). xsimd::fma is the fused
// instruction on AVX2 and NEON, and a product and a sum without FMA
// hardware; but xsimd 8.1 has no AVX-512 fma of its own (its generic one is
// x·y + z, two roundings with contraction off), so on AVX-512 the
// instruction is called by name. (A 512-bit register holds 16 floats or 8
// doubles.)
template <class V>
[[gnu::always_inline]] inline V fmadd(const V& a, const V& b, const V& c) {
#if defined(__AVX512F__)
  using T = typename V::value_type;
  if constexpr (std::is_same_v<T, float> && V::size == 16) return _mm512_fmadd_ps(a, b, c);
  if constexpr (std::is_same_v<T, double> && V::size == 8) return _mm512_fmadd_pd(a, b, c);
#endif
  return xsimd::fma(a, b, c);
}

// a / b, correctly rounded in every lane, as the scalar a / b is. NOTE:
// xsimd 8.1 divides floats on ARM64 by a reciprocal estimate and two
// refinement steps (up to 2 ulp off); there the division instruction is
// called by name.
inline batch divide(const batch& a, const batch& b) {
#if defined(__aarch64__)
  return vdivq_f32(a, b);
#else
  return a / b;
#endif
}

// √x, correctly rounded in every lane, as std::sqrt is. NOTE: xsimd 8.1
// takes a float's square root on ARM64 from a reciprocal square root
// estimate and two refinement steps; there the instruction is called by name.
inline batch square_root(const batch& x) {
#if defined(__aarch64__)
  return vsqrtq_f32(x);
#else
  return xsimd::sqrt(x);
#endif
}

// The sum of x's lanes (xsimd's hadd until 9, reduce_add since).
template <class V>
[[gnu::always_inline]] inline auto reduce_add(const V& x) {
#if XSIMD_VERSION_MAJOR >= 9
  return xsimd::reduce_add(x);
#else
  return xsimd::hadd(x);
#endif
}

#endif  // QKV_SIMD

// Memory at a 64-byte boundary (a cache line, and the widest register), for
// aligned loads. C++17's aligned new, not xsimd::aligned_allocator, whose
// template arguments changed between xsimd's versions.
template <class T>
struct AlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t ALIGNMENT{64};
  AlignedAllocator() = default;
  template <class U>
  explicit AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), ALIGNMENT)); }
  void deallocate(T* p, size_t) { ::operator delete(p, ALIGNMENT); }
  bool operator==(const AlignedAllocator&) const = default;
};
using aligned_floats = std::vector<float, AlignedAllocator<float>>;

}  // namespace qkv::kernels
