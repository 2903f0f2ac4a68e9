// Elementwise kernels: y = f(x), out = a ∘ b and y += α·x.
//
// Every op is written twice. Once on a single float: that is the reference,
// the definition of the op. Once on a batch of W floats: that is the SIMD
// body. A SIMD kernel runs the batch version over whole batches and finishes
// the last n mod W elements with the scalar definition.
//
// Left out on purpose: any layout but contiguous rows and step-0 broadcasts
// (the op layer reduces broadcasting to those), and a SIMD pow (see binary).
#include "kernels/elementwise.hpp"

#include <cmath>
#include <stdexcept>

#include "kernels/simd.hpp"

namespace qkv::kernels {

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;    // 1/√2
constexpr float kInvSqrt2Pi = 0.39894228040143268f;  // 1/√(2π)

// ---- unary -----------------------------------------------------------------------

// The definition of each unary op, on one float.
float unary_one(Unary op, float x) {
  switch (op) {
    case Unary::Neg:
      return -x;
    case Unary::Exp:
      return std::exp(x);
    case Unary::Log:
      return std::log(x);
    case Unary::Sqrt:
      return std::sqrt(x);
    case Unary::Abs:
      return std::abs(x);
    case Unary::Sign:
      return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
    case Unary::Tanh:
      return std::tanh(x);
    case Unary::Sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    // Written as "x < 0 ? 0 : x" rather than max(x, 0) so that a NaN passes
    // through, as it does in torch.relu.
    case Unary::Relu:
      return x < 0.0f ? 0.0f : x;
    case Unary::Step:
      return x > 0.0f ? 1.0f : 0.0f;
    // Φ(x) = (1 + erf(x/√2)) / 2 is the standard normal CDF.
    case Unary::Gelu:
      return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2));
    // d/dx x·Φ(x) = Φ(x) + x·φ(x), with φ(x) = e^(-x²/2) / √(2π) the normal density.
    case Unary::GeluGrad:
      return 0.5f * (1.0f + std::erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
  }
  throw std::invalid_argument("unary: unknown op");
}

// y[i] = f(x[i]) with f applied W floats at a time, then the scalar tail.
// x and y may be the same array: each batch is loaded before it is stored.
template <class F>
void map_unary(Unary op, int64_t n, const float* x, float* y, F f) {
  int64_t i = 0;
  for (; i + W <= n; i += W) f(batch::load_unaligned(x + i)).store_unaligned(y + i);
  for (; i < n; ++i) y[i] = unary_one(op, x[i]);
}

}  // namespace

void unary_reference(Unary op, int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = unary_one(op, x[i]);
}

void unary(Unary op, int64_t n, const float* x, float* y) {
  const batch zero(0.0f), one(1.0f), half(0.5f);
  // The same formulas as unary_one, on batches. A comparison gives a lane mask
  // and select(mask, a, b) picks a where it is set: SIMD's "c ? a : b".
  switch (op) {
    case Unary::Neg:
      return map_unary(op, n, x, y, [](batch v) { return -v; });
    case Unary::Exp:
      return map_unary(op, n, x, y, [](batch v) { return xsimd::exp(v); });
    case Unary::Log:
      return map_unary(op, n, x, y, [](batch v) { return xsimd::log(v); });
    case Unary::Sqrt:
      return map_unary(op, n, x, y, [](batch v) { return xsimd::sqrt(v); });
    case Unary::Abs:
      return map_unary(op, n, x, y, [](batch v) { return xsimd::abs(v); });
    case Unary::Sign:
      return map_unary(op, n, x, y, [&](batch v) {
        return xsimd::select(v > zero, one, zero) - xsimd::select(v < zero, one, zero);
      });
    case Unary::Tanh:
      return map_unary(op, n, x, y, [](batch v) { return xsimd::tanh(v); });
    case Unary::Sigmoid:
      return map_unary(op, n, x, y, [&](batch v) { return one / (one + xsimd::exp(-v)); });
    case Unary::Relu:
      return map_unary(op, n, x, y, [&](batch v) { return xsimd::select(v < zero, zero, v); });
    case Unary::Step:
      return map_unary(op, n, x, y, [&](batch v) { return xsimd::select(v > zero, one, zero); });
    case Unary::Gelu:
      return map_unary(op, n, x, y, [&](batch v) { return half * v * (one + xsimd::erf(v * batch(kInvSqrt2))); });
    case Unary::GeluGrad:
      return map_unary(op, n, x, y, [&](batch v) {
        batch cdf = half * (one + xsimd::erf(v * batch(kInvSqrt2)));
        batch pdf = batch(kInvSqrt2Pi) * xsimd::exp(-half * v * v);
        return xsimd::fma(v, pdf, cdf);
      });
  }
  throw std::invalid_argument("unary: unknown op");
}

// ---- binary ----------------------------------------------------------------------

namespace {

// The definition of each binary op, on one pair of floats.
float binary_one(Binary op, float a, float b) {
  switch (op) {
    case Binary::Add:
      return a + b;
    case Binary::Sub:
      return a - b;
    case Binary::Mul:
      return a * b;
    case Binary::Div:
      return a / b;
    case Binary::Pow:
      return std::pow(a, b);
  }
  throw std::invalid_argument("binary: unknown op");
}

// Row i of an operand: a step-1 operand walks along, a step-0 one repeats p[0].
batch load_operand(const float* p, int64_t step, int64_t i) {
  return step == 0 ? batch(p[0]) : batch::load_unaligned(p + i);
}

// out[i] = f(a[i·a_step], b[i·b_step]), W at a time, then the scalar tail.
template <class F>
void map_binary(Binary op, int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out, F f) {
  int64_t i = 0;
  for (; i + W <= n; i += W) f(load_operand(a, a_step, i), load_operand(b, b_step, i)).store_unaligned(out + i);
  for (; i < n; ++i) out[i] = binary_one(op, a[i * a_step], b[i * b_step]);
}

}  // namespace

void binary_reference(Binary op, int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step,
                      float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = binary_one(op, a[i * a_step], b[i * b_step]);
}

void binary(Binary op, int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out) {
  switch (op) {
    case Binary::Add:
      return map_binary(op, n, a, a_step, b, b_step, out, [](batch u, batch v) { return u + v; });
    case Binary::Sub:
      return map_binary(op, n, a, a_step, b, b_step, out, [](batch u, batch v) { return u - v; });
    case Binary::Mul:
      return map_binary(op, n, a, a_step, b, b_step, out, [](batch u, batch v) { return u * v; });
    case Binary::Div:
      return map_binary(op, n, a, a_step, b, b_step, out, [](batch u, batch v) { return u / v; });
    // NOTE: no SIMD pow. xsimd's is exp(b·log a), which disagrees with std::pow
    // at the edges (0⁰ = 1, NaN⁰ = 1, 1^NaN = 1) and loses a few bits when the
    // result is large. pow is rare in a network, so it stays exact and scalar.
    case Binary::Pow:
      return binary_reference(op, n, a, a_step, b, b_step, out);
  }
  throw std::invalid_argument("binary: unknown op");
}

// ---- axpy ------------------------------------------------------------------------

void axpy_reference(int64_t n, float alpha, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void axpy(int64_t n, float alpha, const float* x, float* y) {
  const batch a(alpha);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    batch y_new = xsimd::fma(a, batch::load_unaligned(x + i), batch::load_unaligned(y + i));
    y_new.store_unaligned(y + i);
  }
  for (; i < n; ++i) y[i] += alpha * x[i];
}

}  // namespace qkv::kernels
