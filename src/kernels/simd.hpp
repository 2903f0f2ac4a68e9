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
//   fmadd, madd   a·b + c: in one rounding where the build fuses (FUSED below),
//                 in two elsewhere; the batch and the scalar forms always agree
//   divide        a / b correctly rounded in every lane, as the scalar a / b
//   square_root   √x correctly rounded in every lane, as std::sqrt
//   ordered_sum   a sum over a row in the one order every build uses (below)
//   aligned_floats  a std::vector of floats at a 64-byte boundary
//
// Every multiply-add in the kernels is one of these calls (or an intrinsic
// named in gemm_simd.hpp): the build compiles with -ffp-contract=off, so the
// compiler fuses nothing of its own. exp, log and tanh are qkv's own
// (kernels/math.hpp), one polynomial for a register and for a float.
//
// ---- the same numbers on every build -------------------------------------------------
//
// A sum over a row is defined by its order, not by the register width: it
// keeps SUM_LANES = 16 running sums, term k going into sum k mod 16 (in
// order of k), and folds them in one tree (fold_sums). A build with 16
// floats a register keeps them in one register, with 8 in two, with 4 in
// four; the scalar twin in an array. So AVX-512, AVX2, SSE2, NEON and the
// scalar build add the same floats in the same order.
//
// What is left is the multiply-add. The default native build fuses where
// the hardware can (FMA3 on x86, every ARM64): one rounding, and the fast
// GEMM. WebAssembly and the portable x86-64 baseline (SSE2) cannot fuse, so
// a build whose numbers must equal theirs rounds twice everywhere: CMake's
// QKV_SAME_NUMBERS=ON (the default where QKV_NATIVE is off, and the web
// preset's). docs/building.md says what holds between which builds.
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

// CMake defines QKV_SAME_NUMBERS as 1 or 0 for every file that includes this
// header (the kernels, the tests and the benchmarks): one without it does
// not compile, rather than fuse where the library does not.
// Whether madd and fmadd fuse: where the hardware can, unless the build
// computes the numbers every build computes (QKV_SAME_NUMBERS, above).
constexpr bool FUSED = HAS_FMA && !QKV_SAME_NUMBERS;

// a·b + c for one float: std::fma (one rounding) where the build fuses, a
// product and a sum (two roundings) where it does not, exactly as fmadd
// below does for a batch. A kernel's scalar twin uses it wherever its SIMD
// body uses fmadd, so that the two agree bit for bit.
inline float madd(float a, float b, float c) {
  if constexpr (FUSED) return std::fma(a, b, c);
  return a * b + c;
}
inline double madd(double a, double b, double c) {
  if constexpr (FUSED) return std::fma(a, b, c);
  return a * b + c;
}

// ---- sums in one order (see "the same numbers" above) --------------------------------

constexpr int64_t SUM_LANES = 16;

// s[0] + … + s[15] in a fixed tree: halves added lane by lane, 8 then 4, 2, 1.
template <class T>
T fold_sums(T (&s)[SUM_LANES]) {
  for (int64_t half = SUM_LANES / 2; half >= 1; half /= 2)
    for (int64_t l = 0; l < half; ++l) s[l] += s[l + half];
  return s[0];
}

// The sum of n terms, the scalar way: sum k mod 16 becomes step(sum, k) for
// k = 0 … n-1 in order (step adds term k: s + t, or madd(a, b, s) for a
// product), then fold_sums. Every running sum starts at +0, which adding
// +0 leaves unchanged, so a SIMD kernel may pad a row with zero terms.
template <class T, class Step>
T ordered_sum(int64_t n, Step step) {
  T s[SUM_LANES] = {};
  int64_t k = 0;
  for (; k + SUM_LANES <= n; k += SUM_LANES)
    for (int64_t l = 0; l < SUM_LANES; ++l) s[l] = step(s[l], k + l);
  for (int64_t l = 0; k + l < n; ++l) s[l] = step(s[l], k + l);
  return fold_sums(s);
}

#if QKV_SIMD
// One SIMD register of floats, as wide as the build's instruction set allows
// (16 for AVX-512, 8 for AVX2, 4 for SSE and NEON).
using batch = xsimd::batch<float>;
constexpr int64_t W = batch::size;  // floats per register

// The same for a batch (of floats or doubles), fused exactly where madd is
// (FUSED). xsimd::fma is the fused
// instruction on AVX2 and NEON, and a product and a sum without FMA
// hardware; but xsimd 8.1 has no AVX-512 fma of its own (its generic one is
// x·y + z, two roundings with contraction off), so on AVX-512 the
// instruction is called by name. (A 512-bit register holds 16 floats or 8
// doubles.)
template <class V>
[[gnu::always_inline]] inline V fmadd(const V& a, const V& b, const V& c) {
  if constexpr (!FUSED) return a * b + c;  // two roundings, as madd
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

// ordered_sum for a SIMD kernel: the same 16 running sums, held in
// SUM_LANES / V::size registers (V a batch of floats or of doubles).
// step(acc, k) adds terms k … k + V::size - 1 into the register acc; the
// row's last n mod 16 terms go through tail(sum, k), the scalar step, into
// the running sum they belong to. Then fold_sums, as the scalar form.
template <class V, class Step, class Tail>
[[gnu::always_inline]] inline typename V::value_type ordered_sum_simd(int64_t n, Step step, Tail tail) {
  using T = typename V::value_type;
  constexpr int64_t L = V::size, R = SUM_LANES / L;
  static_assert(R * L == SUM_LANES, "a register holds 16, 8, 4 or 2 of the running sums");
  V acc[R];
  for (V& a : acc) a = V(T(0));
  int64_t k = 0;
  for (; k + SUM_LANES <= n; k += SUM_LANES)
    for (int64_t r = 0; r < R; ++r) acc[r] = step(acc[r], k + r * L);
  alignas(64) T s[SUM_LANES];
  for (int64_t r = 0; r < R; ++r) acc[r].store_aligned(s + r * L);
  for (int64_t l = 0; k + l < n; ++l) s[l] = tail(s[l], k + l);
  return fold_sums(s);
}

// The sum of x's lanes in xsimd's order (hadd until 9, reduce_add since),
// which depends on the width: for bench's FMA loop, which only needs its
// result used. A kernel's sum is an ordered_sum.
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
