// Elementwise kernels: y = f(x), out = a ∘ b and y += α·x.
//
// The two sections every kernel file has (simd.hpp). In the reference, each
// op is one struct whose `scalar` is the op on one float: the definition,
// which the reference kernel maps over the array; visit_unary and
// visit_binary bind each enum value of elementwise.hpp to its struct. In the
// SIMD section, Simd<Op> is the same formula on a batch of W floats, and one
// generic map kernel per arity runs it over whole batches and finishes the
// last n mod W elements with `scalar`, as xsimd's docs do. Adding an op is an
// enum value, a struct, a case in its visit, and its Simd<Op>.
//
// Long arrays are cut into pieces for the kernels' threads (see "threads").
//
// Left out on purpose: any layout but contiguous rows and step-0 broadcasts
// (the op layer reduces broadcasting to those), and a SIMD pow (see Pow).
#include "kernels/elementwise.hpp"

#include <cmath>
#include <stdexcept>

#include "kernels/math.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace qkv::kernels {

// ==== reference: each op on one float ================================================

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;    // 1/√2
constexpr float kInvSqrt2Pi = 0.39894228040143268f;  // 1/√(2π)

// ---- unary ops -------------------------------------------------------------------

// y = -x
struct Neg {
  static float scalar(float x) { return -x; }
};

// y = eˣ (qkv's exp, math.hpp, as every kernel's: one polynomial for a
// float and a register)
struct Exp {
  static float scalar(float x) { return math::exp(x); }
};

// y = ln x
struct Log {
  static float scalar(float x) { return math::log(x); }
};

// y = √x
struct Sqrt {
  static float scalar(float x) { return std::sqrt(x); }
};

// y = |x|
struct Abs {
  static float scalar(float x) { return std::abs(x); }
};

// y = -1, 0 or 1: the derivative of |x|, with 0 at 0
struct Sign {
  static float scalar(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }
};

// y = tanh x
struct Tanh {
  static float scalar(float x) { return math::tanh(x); }
};

// y = σ(x) = 1 / (1 + e⁻ˣ)
struct Sigmoid {
  static float scalar(float x) { return math::sigmoid(x); }
};

// y = max(x, 0), written as "x < 0 ? 0 : x" so that a NaN passes through, as
// it does in torch.relu.
struct Relu {
  static float scalar(float x) { return x < 0.0f ? 0.0f : x; }
};

// y = 1 if x > 0 else 0: the derivative of relu
struct Step {
  static float scalar(float x) { return x > 0.0f ? 1.0f : 0.0f; }
};

// y = x·Φ(x) = x/2 · (1 + erf(x/√2)), the exact GELU (PyTorch's default);
// Φ is the standard normal CDF. NOTE: erf is the C library's here and
// xsimd's in Simd<Gelu>, which may differ in the last bit: GELU's numbers
// are not the same on every build (no lesson uses it).
struct Gelu {
  static float scalar(float x) { return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2)); }
};

// y = d gelu/dx = Φ(x) + x·φ(x), with φ(x) = e^(-x²/2) / √(2π) the normal density
struct GeluGrad {
  static float scalar(float x) {
    return madd(x, kInvSqrt2Pi * math::exp(-0.5f * x * x), 0.5f * (1.0f + std::erf(x * kInvSqrt2)));
  }
};

// Calls visit(Op{}) with the struct of `op`: the one place each enum value
// meets its struct.
template <class Visit>
void visit_unary(Unary op, Visit visit) {
  // clang-format off
  switch (op) {
    case Unary::Neg: return visit(Neg{});
    case Unary::Exp: return visit(Exp{});
    case Unary::Log: return visit(Log{});
    case Unary::Sqrt: return visit(Sqrt{});
    case Unary::Abs: return visit(Abs{});
    case Unary::Sign: return visit(Sign{});
    case Unary::Tanh: return visit(Tanh{});
    case Unary::Sigmoid: return visit(Sigmoid{});
    case Unary::Relu: return visit(Relu{});
    case Unary::Step: return visit(Step{});
    case Unary::Gelu: return visit(Gelu{});
    case Unary::GeluGrad: return visit(GeluGrad{});
  }
  // clang-format on
  throw std::invalid_argument("unary: op is not a value of kernels::Unary");
}

// ---- binary ops ------------------------------------------------------------------

// y = a + b
struct Add {
  static float scalar(float a, float b) { return a + b; }
};

// y = a - b
struct Sub {
  static float scalar(float a, float b) { return a - b; }
};

// y = a·b
struct Mul {
  static float scalar(float a, float b) { return a * b; }
};

// y = a / b
struct Div {
  static float scalar(float a, float b) { return a / b; }
};

// y = a^b
// NOTE: no Simd<Pow>, so the kernel runs `scalar` throughout. xsimd's pow is
// exp(b·log a), which disagrees with std::pow at the edges (0⁰ = 1, NaN⁰ = 1,
// 1^NaN = 1) and loses a few bits when the result is large. pow is rare in a
// network, so it stays exact and scalar.
struct Pow {
  static float scalar(float a, float b) { return std::pow(a, b); }
};

// Calls visit(Op{}) with the struct of `op`.
template <class Visit>
void visit_binary(Binary op, Visit visit) {
  // clang-format off
  switch (op) {
    case Binary::Add: return visit(Add{});
    case Binary::Sub: return visit(Sub{});
    case Binary::Mul: return visit(Mul{});
    case Binary::Div: return visit(Div{});
    case Binary::Pow: return visit(Pow{});
  }
  // clang-format on
  throw std::invalid_argument("binary: op is not a value of kernels::Binary");
}

// ---- the maps --------------------------------------------------------------------

template <class Op>
void map_unary_reference(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = Op::scalar(x[i]);
}

// out[i] = Op(a[i·a_step], b[i·b_step]): a step-1 operand walks along, a step-0 one repeats.
template <class Op>
void map_binary_reference(int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = Op::scalar(a[i * a_step], b[i * b_step]);
}

}  // namespace

void unary_reference(Unary op, int64_t n, const float* x, float* y) {
  visit_unary(op, [&](auto kind) { map_unary_reference<decltype(kind)>(n, x, y); });
}

void binary_reference(Binary op, int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step,
                      float* out) {
  visit_binary(op, [&](auto kind) { map_binary_reference<decltype(kind)>(n, a, a_step, b, b_step, out); });
}

void axpy_reference(int64_t n, float alpha, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = madd(alpha, x[i], y[i]);
}

// ==== SIMD: each op on a batch of W floats ===========================================
#if QKV_SIMD

namespace {

// Simd<Op>::apply is Op::scalar's formula on a batch. A comparison gives a
// lane mask and select(mask, a, b) picks a where it is set: SIMD's "c ? a : b".
// An op without a specialisation (Pow) runs its scalar form throughout.
template <class Op>
struct Simd {};

// ---- unary ops -------------------------------------------------------------------

template <>
struct Simd<Neg> {
  static batch apply(batch x) { return -x; }
};

template <>
struct Simd<Exp> {
  static batch apply(batch x) { return math::exp(x); }
};

template <>
struct Simd<Log> {
  static batch apply(batch x) { return math::log(x); }
};

template <>
struct Simd<Sqrt> {
  static batch apply(batch x) { return square_root(x); }
};

template <>
struct Simd<Abs> {
  static batch apply(batch x) { return xsimd::abs(x); }
};

template <>
struct Simd<Sign> {
  static batch apply(batch x) {
    const batch zero(0.0f), one(1.0f);
    return xsimd::select(x > zero, one, zero) - xsimd::select(x < zero, one, zero);
  }
};

template <>
struct Simd<Tanh> {
  static batch apply(batch x) { return math::tanh(x); }
};

template <>
struct Simd<Sigmoid> {
  static batch apply(batch x) { return math::sigmoid(x); }
};

template <>
struct Simd<Relu> {
  static batch apply(batch x) {
    const batch zero(0.0f);
    return xsimd::select(x < zero, zero, x);
  }
};

template <>
struct Simd<Step> {
  static batch apply(batch x) {
    const batch zero(0.0f), one(1.0f);
    return xsimd::select(x > zero, one, zero);
  }
};

template <>
struct Simd<Gelu> {
  static batch apply(batch x) {
    const batch half(0.5f), one(1.0f);
    return half * x * (one + xsimd::erf(x * batch(kInvSqrt2)));
  }
};

template <>
struct Simd<GeluGrad> {
  static batch apply(batch x) {
    const batch half(0.5f), one(1.0f);
    batch cdf = half * (one + xsimd::erf(x * batch(kInvSqrt2)));
    batch pdf = batch(kInvSqrt2Pi) * math::exp(-half * x * x);
    return fmadd(x, pdf, cdf);
  }
};

// ---- binary ops ------------------------------------------------------------------

template <>
struct Simd<Add> {
  static batch apply(batch a, batch b) { return a + b; }
};

template <>
struct Simd<Sub> {
  static batch apply(batch a, batch b) { return a - b; }
};

template <>
struct Simd<Mul> {
  static batch apply(batch a, batch b) { return a * b; }
};

template <>
struct Simd<Div> {
  static batch apply(batch a, batch b) { return divide(a, b); }
};

// ---- the maps --------------------------------------------------------------------

// y[i] = Op(x[i]), W floats at a time, then the scalar tail.
// x and y may be the same array: each batch is loaded before it is stored.
template <class Op>
void map_unary(int64_t n, const float* x, float* y) {
  int64_t i = 0;
  for (; i + W <= n; i += W) Simd<Op>::apply(batch::load_unaligned(x + i)).store_unaligned(y + i);
  for (; i < n; ++i) y[i] = Op::scalar(x[i]);
}

// Row i of an operand: a step-1 operand walks along, a step-0 one repeats p[0].
batch load_operand(const float* p, int64_t step, int64_t i) {
  return step == 0 ? batch(p[0]) : batch::load_unaligned(p + i);
}

// out[i] = Op(a[i·a_step], b[i·b_step]), W at a time, then the scalar tail;
// an op with no Simd<Op> (Pow) runs `scalar` throughout.
template <class Op>
void map_binary(int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out) {
  if constexpr (requires(batch u) { Simd<Op>::apply(u, u); }) {
    int64_t i = 0;
    for (; i + W <= n; i += W)
      Simd<Op>::apply(load_operand(a, a_step, i), load_operand(b, b_step, i)).store_unaligned(out + i);
    for (; i < n; ++i) out[i] = Op::scalar(a[i * a_step], b[i * b_step]);
  } else {
    map_binary_reference<Op>(n, a, a_step, b, b_step, out);
  }
}

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

}  // namespace

void unary(Unary op, int64_t n, const float* x, float* y) {
  visit_unary(op, [&](auto kind) {
    using Op = decltype(kind);
    parallel_ranges(n, grain_of(op), W,
                    [&](int64_t begin, int64_t end) { map_unary<Op>(end - begin, x + begin, y + begin); });
  });
}

void binary(Binary op, int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out) {
  const int64_t grain = op == Binary::Pow ? GRAIN_COSTLY : GRAIN_CHEAP;
  visit_binary(op, [&](auto kind) {
    using Op = decltype(kind);
    parallel_ranges(n, grain, W, [&](int64_t begin, int64_t end) {
      map_binary<Op>(end - begin, a + begin * a_step, a_step, b + begin * b_step, b_step, out + begin);
    });
  });
}

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

#else  // the scalar build: each kernel is its reference

void unary(Unary op, int64_t n, const float* x, float* y) { unary_reference(op, n, x, y); }
void binary(Binary op, int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out) {
  binary_reference(op, n, a, a_step, b, b_step, out);
}
void axpy(int64_t n, float alpha, const float* x, float* y) { axpy_reference(n, alpha, x, y); }

#endif  // QKV_SIMD

}  // namespace qkv::kernels
