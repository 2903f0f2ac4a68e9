// Elementwise kernels: y = f(x), out = a ∘ b and y += α·x.
//
// Each op is one struct, written twice. `scalar` is the op on one float: the
// definition, which the reference kernel runs. `simd` is the same formula on a
// batch of W floats. One generic map kernel per arity runs `simd` over whole
// batches and finishes the last n mod W elements with `scalar`, as xsimd's
// docs do; a table at the end of each section binds each enum value of
// elementwise.hpp to its struct's two kernels. Adding an op is an enum value,
// a struct and a table row.
//
// Long arrays are cut into pieces for the kernels' threads (see "threads").
//
// Left out on purpose: any layout but contiguous rows and step-0 broadcasts
// (the op layer reduces broadcasting to those), and a SIMD pow (see Pow).
#include "kernels/elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace qkv::kernels {

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;    // 1/√2
constexpr float kInvSqrt2Pi = 0.39894228040143268f;  // 1/√(2π)

// ---- unary ops -------------------------------------------------------------------
// In `simd`, a comparison gives a lane mask and select(mask, a, b) picks a
// where it is set: SIMD's "c ? a : b".

// y = -x
struct Neg {
  static float scalar(float x) { return -x; }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) { return -x; }
#endif
};

// y = eˣ
struct Exp {
  static float scalar(float x) { return std::exp(x); }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) { return xsimd::exp(x); }
#endif
};

// y = ln x
struct Log {
  static float scalar(float x) { return std::log(x); }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) { return xsimd::log(x); }
#endif
};

// y = √x
struct Sqrt {
  static float scalar(float x) { return std::sqrt(x); }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) { return square_root(x); }
#endif
};

// y = |x|
struct Abs {
  static float scalar(float x) { return std::abs(x); }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) { return xsimd::abs(x); }
#endif
};

// y = -1, 0 or 1: the derivative of |x|, with 0 at 0
struct Sign {
  static float scalar(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) {
    const batch zero(0.0f), one(1.0f);
    return xsimd::select(x > zero, one, zero) - xsimd::select(x < zero, one, zero);
  }
#endif
};

// y = tanh x
struct Tanh {
  static float scalar(float x) { return std::tanh(x); }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) { return xsimd::tanh(x); }
#endif
};

// y = σ(x) = 1 / (1 + e⁻ˣ)
struct Sigmoid {
  static float scalar(float x) { return 1.0f / (1.0f + std::exp(-x)); }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) {
    const batch one(1.0f);
    return divide(one, one + xsimd::exp(-x));
  }
#endif
};

// y = max(x, 0), written as "x < 0 ? 0 : x" so that a NaN passes through, as
// it does in torch.relu.
struct Relu {
  static float scalar(float x) { return x < 0.0f ? 0.0f : x; }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) {
    const batch zero(0.0f);
    return xsimd::select(x < zero, zero, x);
  }
#endif
};

// y = 1 if x > 0 else 0: the derivative of relu
struct Step {
  static float scalar(float x) { return x > 0.0f ? 1.0f : 0.0f; }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) {
    const batch zero(0.0f), one(1.0f);
    return xsimd::select(x > zero, one, zero);
  }
#endif
};

// y = x·Φ(x) = x/2 · (1 + erf(x/√2)), the exact GELU (PyTorch's default);
// Φ is the standard normal CDF.
struct Gelu {
  static float scalar(float x) { return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2)); }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) {
    const batch half(0.5f), one(1.0f);
    return half * x * (one + xsimd::erf(x * batch(kInvSqrt2)));
  }
#endif
};

// y = d gelu/dx = Φ(x) + x·φ(x), with φ(x) = e^(-x²/2) / √(2π) the normal density
struct GeluGrad {
  static float scalar(float x) {
    return 0.5f * (1.0f + std::erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
  }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch x) {
    const batch half(0.5f), one(1.0f);
    batch cdf = half * (one + xsimd::erf(x * batch(kInvSqrt2)));
    batch pdf = batch(kInvSqrt2Pi) * xsimd::exp(-half * x * x);
    return fmadd(x, pdf, cdf);
  }
#endif
};

// ---- the unary map ---------------------------------------------------------------

#ifndef QKV_SCALAR_KERNELS
// y[i] = Op(x[i]), W floats at a time, then the scalar tail.
// x and y may be the same array: each batch is loaded before it is stored.
template <class Op>
void map_unary(int64_t n, const float* x, float* y) {
  int64_t i = 0;
  for (; i + W <= n; i += W) Op::simd(batch::load_unaligned(x + i)).store_unaligned(y + i);
  for (; i < n; ++i) y[i] = Op::scalar(x[i]);
}
#endif

template <class Op>
void map_unary_reference(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = Op::scalar(x[i]);
}

using UnaryKernel = void (*)(int64_t n, const float* x, float* y);

// A row of the table: an enum value and its struct's two kernels.
struct UnaryRow {
  Unary op;
  UnaryKernel simd, reference;
};

template <class Op>
constexpr UnaryRow unary_row(Unary op) {
#ifdef QKV_SCALAR_KERNELS
  return {op, nullptr, map_unary_reference<Op>};  // no SIMD kernel in the scalar build
#else
  return {op, map_unary<Op>, map_unary_reference<Op>};
#endif
}

// The table: each enum value and its struct (row_of finds the row; order is free).
// clang-format off
constexpr UnaryRow kUnaryOps[] = {
    unary_row<Neg>(Unary::Neg),
    unary_row<Exp>(Unary::Exp),
    unary_row<Log>(Unary::Log),
    unary_row<Sqrt>(Unary::Sqrt),
    unary_row<Abs>(Unary::Abs),
    unary_row<Sign>(Unary::Sign),
    unary_row<Tanh>(Unary::Tanh),
    unary_row<Sigmoid>(Unary::Sigmoid),
    unary_row<Relu>(Unary::Relu),
    unary_row<Step>(Unary::Step),
    unary_row<Gelu>(Unary::Gelu),
    unary_row<GeluGrad>(Unary::GeluGrad),
};
// clang-format on

const UnaryRow& row_of(Unary op) {
  for (const UnaryRow& row : kUnaryOps)
    if (row.op == op) return row;
  throw std::invalid_argument("unary: op has no row in kUnaryOps");
}

// ---- binary ops ------------------------------------------------------------------

// y = a + b
struct Add {
  static float scalar(float a, float b) { return a + b; }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch a, batch b) { return a + b; }
#endif
};

// y = a - b
struct Sub {
  static float scalar(float a, float b) { return a - b; }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch a, batch b) { return a - b; }
#endif
};

// y = a·b
struct Mul {
  static float scalar(float a, float b) { return a * b; }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch a, batch b) { return a * b; }
#endif
};

// y = a / b
struct Div {
  static float scalar(float a, float b) { return a / b; }
#ifndef QKV_SCALAR_KERNELS
  static batch simd(batch a, batch b) { return divide(a, b); }
#endif
};

// y = a^b
// NOTE: no `simd`, so the kernel runs `scalar` throughout. xsimd's pow is
// exp(b·log a), which disagrees with std::pow at the edges (0⁰ = 1, NaN⁰ = 1,
// 1^NaN = 1) and loses a few bits when the result is large. pow is rare in a
// network, so it stays exact and scalar.
struct Pow {
  static float scalar(float a, float b) { return std::pow(a, b); }
};

// ---- the binary map --------------------------------------------------------------

#ifndef QKV_SCALAR_KERNELS
// Row i of an operand: a step-1 operand walks along, a step-0 one repeats p[0].
batch load_operand(const float* p, int64_t step, int64_t i) {
  return step == 0 ? batch(p[0]) : batch::load_unaligned(p + i);
}
#endif

template <class Op>
void map_binary_reference(int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = Op::scalar(a[i * a_step], b[i * b_step]);
}

#ifndef QKV_SCALAR_KERNELS
// out[i] = Op(a[i·a_step], b[i·b_step]), W at a time, then the scalar tail;
// an op with no `simd` form (Pow) runs `scalar` throughout.
template <class Op>
void map_binary(int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out) {
  if constexpr (requires(batch u) { Op::simd(u, u); }) {
    int64_t i = 0;
    for (; i + W <= n; i += W)
      Op::simd(load_operand(a, a_step, i), load_operand(b, b_step, i)).store_unaligned(out + i);
    for (; i < n; ++i) out[i] = Op::scalar(a[i * a_step], b[i * b_step]);
  } else {
    map_binary_reference<Op>(n, a, a_step, b, b_step, out);
  }
}
#endif

using BinaryKernel = void (*)(int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out);

// A row of the table: an enum value and its struct's two kernels.
struct BinaryRow {
  Binary op;
  BinaryKernel simd, reference;
};

template <class Op>
constexpr BinaryRow binary_row(Binary op) {
#ifdef QKV_SCALAR_KERNELS
  return {op, nullptr, map_binary_reference<Op>};  // no SIMD kernel in the scalar build
#else
  return {op, map_binary<Op>, map_binary_reference<Op>};
#endif
}

// The table: each enum value and its struct (row_of finds the row; order is free).
// clang-format off
constexpr BinaryRow kBinaryOps[] = {
    binary_row<Add>(Binary::Add),
    binary_row<Sub>(Binary::Sub),
    binary_row<Mul>(Binary::Mul),
    binary_row<Div>(Binary::Div),
    binary_row<Pow>(Binary::Pow),
};
// clang-format on

const BinaryRow& row_of(Binary op) {
  for (const BinaryRow& row : kBinaryOps)
    if (row.op == op) return row;
  throw std::invalid_argument("binary: op has no row in kBinaryOps");
}

#ifndef QKV_SCALAR_KERNELS
// ---- threads ---------------------------------------------------------------------
//
// A long array is cut into pieces, one task each. Every element is computed
// alone, so any cut gives the same result, provided the pieces are whole
// batches of W (the SIMD and scalar forms of an op may round differently, so
// only the array's own last n mod W elements take the scalar tail).
//
// Floats a task should take, at least: about 10 µs of work, what waking a
// thread costs. A memory-bound op (add, relu) does ~64K floats in that
// time; one built on exp or erf, a quarter of that.
constexpr int64_t GRAIN_CHEAP = 1 << 16;
constexpr int64_t GRAIN_COSTLY = 1 << 14;

int64_t grain_of(Unary op) {
  switch (op) {
    case Unary::Exp:
    case Unary::Log:
    case Unary::Tanh:
    case Unary::Sigmoid:
    case Unary::Gelu:
    case Unary::GeluGrad:
      return GRAIN_COSTLY;
    default:
      return GRAIN_CHEAP;
  }
}

#endif

}  // namespace

// ---- the kernels elementwise.hpp declares ----------------------------------------

#ifndef QKV_SCALAR_KERNELS
void unary(Unary op, int64_t n, const float* x, float* y) {
  const UnaryKernel kernel = row_of(op).simd;
  parallel_ranges(n, grain_of(op), W, [&](int64_t begin, int64_t end) { kernel(end - begin, x + begin, y + begin); });
}
#endif
void unary_reference(Unary op, int64_t n, const float* x, float* y) { row_of(op).reference(n, x, y); }

#ifndef QKV_SCALAR_KERNELS
void binary(Binary op, int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out) {
  const BinaryKernel kernel = row_of(op).simd;
  const int64_t grain = op == Binary::Pow ? GRAIN_COSTLY : GRAIN_CHEAP;
  parallel_ranges(n, grain, W, [&](int64_t begin, int64_t end) {
    kernel(end - begin, a + begin * a_step, a_step, b + begin * b_step, b_step, out + begin);
  });
}
#endif
void binary_reference(Binary op, int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step,
                      float* out) {
  row_of(op).reference(n, a, a_step, b, b_step, out);
}

// ---- axpy ------------------------------------------------------------------------

void axpy_reference(int64_t n, float alpha, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

#ifndef QKV_SCALAR_KERNELS
void axpy(int64_t n, float alpha, const float* x, float* y) {
  const batch a(alpha);
  parallel_ranges(n, GRAIN_CHEAP, W, [&](int64_t begin, int64_t end) {
    int64_t i = begin;
    for (; i + W <= end; i += W) {
      batch y_new = fmadd(a, batch::load_unaligned(x + i), batch::load_unaligned(y + i));
      y_new.store_unaligned(y + i);
    }
    for (; i < end; ++i) y[i] = madd(alpha, x[i], y[i]);
  });
}
#endif

}  // namespace qkv::kernels
