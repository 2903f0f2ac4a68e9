// Elementwise ops: arithmetic with broadcasting, the unary maps, masked_fill.
//
// Each op computes its output with one of the map kernels (kernels/elementwise)
// and records its backward right beneath it: the gradient of y = f(x) is
// dout · f'(x), and a broadcast input gets it summed back to its own shape
// with sum_to.
//
// How a built-in backward is written, here and in every op file:
//   - dx = dout ∘ g, for an op of one input with dx of dout's shape (the
//     unary maps, ∘ a scalar, masked_fill, dropout): dx is written over dout
//     in place (grad_binary and grad_neg below, which call the map kernel;
//     dropout's mask product; masked_fill's fill). The backward owns dout
//     (autograd.hpp), so when nothing else sees it, it allocates nothing.
//     g, when it is not a saved tensor, is made with op calls (1 - y², p·aᵖ⁻¹).
//   - a fused op (softmax, layer_norm, cross_entropy, the GRU cell, matmul,
//     linear) or a copy (the shape ops' takes, im2col1d): its backward is
//     the kernel or loop that mirrors its forward's (scatter_add for gather).
//   - everything else is op calls, which record nothing (backward runs under
//     NoGradGuard): two inputs that both read dout (mul, div, pow, where), an
//     input broadcast to the output (sum_to), a gradient of another shape
//     (sum, max, expand, repeat_interleave).
//
// Broadcasting is done here, not in the kernels: binary_op walks the output
// row by row and tells the kernel, per input, whether it walks along the row
// (step 1) or repeats one value (step 0).
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/ops/broadcast.hpp>
#include <qkv/ops/compare.hpp>
#include <qkv/ops/elementwise.hpp>

#include <vector>

#include "kernels/elementwise.hpp"
#include "ops/util.hpp"

namespace qkv {

namespace {

// --- broadcasting, one row at a time --------------------------------------------
//
// out = a ∘ b with a and b broadcast to out's shape. The strided walk
// (detail::broadcast_walk, kernels/walk.hpp) merges out's dims into a grid
// of rows along which each input walks (step 1) or repeats one value
// (step 0), which is exactly what the binary kernel takes:
//   (M, N)    + (M, N)       1 row of M·N     steps 1, 1
//   (M, N)    + (N)          M rows of N      steps 1, 1  (b starts over each row)
//   (B, T, S) * (B, T, 1)    B·T rows of S    steps 1, 0  (b moves on by 1 each row)
//   (M, 1)    + (1, N)       M rows of N      steps 0, 1

// out = a ∘ b, broadcasting; `name` is the op named in a shape error.
Tensor binary_op(kernels::Binary op, const Tensor& a, const Tensor& b, const char* name) {
  detail::check_input(a, name, "a");
  detail::check_input(b, name, "b");
  Tensor out = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), name), name);
  if (out.numel() == 0) return out;
  if (a.shape() == b.shape()) {  // no broadcasting (most calls): one row of numel elements
    kernels::binary(op, out.numel(), a.data(), 1, b.data(), 1, out.data());
    return out;
  }
  const auto walk = detail::broadcast_walk(out.shape(), a.shape(), b.shape());
  const int64_t n = walk.row_length(), a_step = walk.row_step(0), b_step = walk.row_step(1);
  const float* pa = a.data();
  const float* pb = b.data();
  float* po = out.data();
  walk.for_each_row(
      [&](int64_t o, const auto& at) { kernels::binary(op, n, pa + at[0], a_step, pb + at[1], b_step, po + o); });
  return out;
}

// out = a ∘ s and out = s ∘ b: the scalar is a step-0 operand, no tensor made for it.
Tensor binary_op(kernels::Binary op, const Tensor& a, float s, const char* name) {
  detail::check_input(a, name, "a");
  Tensor out = Tensor::empty(a.shape());
  kernels::binary(op, a.numel(), a.data(), 1, &s, 0, out.data());
  return out;
}
Tensor binary_op(kernels::Binary op, float s, const Tensor& b, const char* name) {
  detail::check_input(b, name, "b");
  Tensor out = Tensor::empty(b.shape());
  kernels::binary(op, b.numel(), &s, 0, b.data(), 1, out.data());
  return out;
}

// y = f(x), recording nothing: the forward of the unary ops, and the
// derivatives (Sign, Step, GeluGrad) their backwards need.
Tensor unary_op(kernels::Unary op, const Tensor& x, const char* name) {
  detail::check_input(x, name, "x");
  Tensor out = Tensor::empty(x.shape());
  kernels::unary(op, x.numel(), x.data(), out.data());
  return out;
}

// --- for the backwards: a gradient written over dout ------------------------------
//
// A backward function reads dout (autograd.hpp); when nothing else sees it,
// dx = dout ∘ b can be written over dout's numbers (reuse_or_empty), and the
// op's backward allocates nothing. b has dout's shape, or is a scalar. A
// second factor is then applied to dx in place (update_binary, update_neg).

Tensor grad_binary(kernels::Binary op, const Tensor& dout, const Tensor& b) {
  Tensor dx = reuse_or_empty(dout);
  kernels::binary(op, dout.numel(), dout.data(), 1, b.data(), 1, dx.data());
  return dx;
}
Tensor grad_binary(kernels::Binary op, const Tensor& dout, float s) {
  Tensor dx = reuse_or_empty(dout);
  kernels::binary(op, dout.numel(), dout.data(), 1, &s, 0, dx.data());
  return dx;
}
Tensor grad_neg(const Tensor& dout) {
  Tensor dx = reuse_or_empty(dout);
  kernels::unary(kernels::Unary::Neg, dout.numel(), dout.data(), dx.data());
  return dx;
}
// dx = dx ∘ b and dx = -dx, in place.
void update_binary(kernels::Binary op, Tensor& dx, const Tensor& b) {
  float* g = dx.data();
  kernels::binary(op, dx.numel(), g, 1, b.data(), 1, g);
}
void update_neg(Tensor& dx) {
  float* g = dx.data();
  kernels::unary(kernels::Unary::Neg, dx.numel(), g, g);
}

// Where mask ≠ 0 (the mask broadcast to out's shape), out = value.
void fill_where(Tensor& out, const IntTensor& mask, float value) {
  const auto walk = detail::broadcast_walk(out.shape(), mask.shape());
  const int64_t n = walk.row_length(), step = walk.row_step(0);
  const int64_t* m = mask.data();
  float* po = out.data();
  walk.for_each_row([&](int64_t o, const auto& at) {
    for (int64_t i = 0; i < n; ++i)
      if (m[at[0] + i * step] != 0) po[o + i] = value;
  });
}

}  // namespace

// --- arithmetic, broadcasting ---------------------------------------------------
// NOTE: each backward tests requires_grad before computing a gradient, so a
// constant operand (a mask, a target) costs nothing.

// y = a + b      da = dout      db = dout      (each summed to its input's shape)
Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op(kernels::Binary::Add, a, b, "add");
  // The gradients need none of a's or b's numbers: the graph keeps neither.
  record(out, "AddBackward", {a, b}, /*saved=*/{},
         [da = detail::OperandGrad(a, out), db = detail::OperandGrad(b, out)](
             const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> {
           return {da.of(dout), db.of(dout)};
         });
  return out;
}

// y = a - b      da = dout      db = -dout
Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op(kernels::Binary::Sub, a, b, "sub");
  record(out, "SubBackward", {a, b}, /*saved=*/{},
         [da = detail::OperandGrad(a, out), db = detail::OperandGrad(b, out)](
             const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> {
           return {da.of(dout), db.needed() ? neg(db.of(dout)) : Tensor()};
         });
  return out;
}

// y = a·b        da = dout·b    db = dout·a
Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op(kernels::Binary::Mul, a, b, "mul");
  record(out, "MulBackward", {a, b}, /*saved=*/{a, b},
         [da = detail::OperandGrad(a, out), db = detail::OperandGrad(b, out)](
             const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           return {da.needed() ? da.of(dout * saved[1]) : Tensor(), db.needed() ? db.of(dout * saved[0]) : Tensor()};
         });
  return out;
}

// y = a / b      da = dout / b      db = -dout·a / b² = -dout·y / b
Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op(kernels::Binary::Div, a, b, "div");
  // a's numbers are not read (db uses y = a / b): only whether it needs a gradient, and its shape.
  record(out, "DivBackward", {a, b}, /*saved=*/{b, out},
         [da = detail::OperandGrad(a, out), db = detail::OperandGrad(b, out)](
             const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& y = saved[1];
           return {da.needed() ? da.of(dout / saved[0]) : Tensor(),
                   db.needed() ? neg(db.of(dout * y / saved[0])) : Tensor()};
         });
  return out;
}

// y = a^b        da = dout·b·a^(b-1)      db = dout·a^b·ln a
// NOTE: ln a is -inf at a = 0; there PyTorch takes the limit a^b·ln a → 0
// (for b > 0), and so does this, by zeroing ln a where a = 0. For a < 0,
// ln a is NaN, as in PyTorch.
// NOTE: where b = 0, y = a⁰ = 1 for every a, so da = 0; the formula would
// give 0·0⁻¹ = 0·inf = NaN at a = 0. PyTorch's pow_backward_self sets da to
// 0 wherever b = 0, and pow(a, 0.0f) below does the same.
Tensor pow(const Tensor& a, const Tensor& exponent) {
  const Tensor& b = exponent;
  Tensor out = binary_op(kernels::Binary::Pow, a, b, "pow");
  record(out, "PowBackward", {a, b}, /*saved=*/{a, b, out},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& base = saved[0];
           const Tensor& power = saved[1];
           const Tensor& y = saved[2];
           Tensor dbase, dpower;
           if (base.requires_grad())
             dbase = sum_to(masked_fill(dout * power * pow(base, power - 1.0f), eq(power, 0.0f), 0.0f), base.shape());
           if (power.requires_grad())
             dpower = sum_to(dout * y * masked_fill(log(base), eq(base, 0.0f), 0.0f), power.shape());
           return {dbase, dpower};
         });
  return out;
}

// --- arithmetic with a scalar (no broadcast tensor is made for it) --------------

// y = a + s      da = dout
Tensor add(const Tensor& a, float b) {
  Tensor out = binary_op(kernels::Binary::Add, a, b, "add");
  record(out, "AddBackward", {a}, /*saved=*/{},
         [](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> { return {dout}; });
  return out;
}

// y = a - s      da = dout
Tensor sub(const Tensor& a, float b) {
  Tensor out = binary_op(kernels::Binary::Sub, a, b, "sub");
  record(out, "SubBackward", {a}, /*saved=*/{},
         [](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> { return {dout}; });
  return out;
}

// y = s - b      db = -dout
Tensor sub(float a, const Tensor& b) {
  Tensor out = binary_op(kernels::Binary::Sub, a, b, "sub");
  record(out, "RsubBackward", {b}, /*saved=*/{},
         [](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> { return {grad_neg(dout)}; });
  return out;
}

// y = a·s        da = dout·s
Tensor mul(const Tensor& a, float b) {
  Tensor out = binary_op(kernels::Binary::Mul, a, b, "mul");
  record(out, "MulBackward", {a}, /*saved=*/{}, [b](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> {
    return {grad_binary(kernels::Binary::Mul, dout, b)};
  });
  return out;
}

// y = a / s      da = dout / s
Tensor div(const Tensor& a, float b) {
  Tensor out = binary_op(kernels::Binary::Div, a, b, "div");
  record(out, "DivBackward", {a}, /*saved=*/{}, [b](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> {
    return {grad_binary(kernels::Binary::Div, dout, b)};
  });
  return out;
}

// y = s / b      db = -dout·s / b² = -dout·y / b
Tensor div(float a, const Tensor& b) {
  Tensor out = binary_op(kernels::Binary::Div, a, b, "div");
  record(out, "RdivBackward", {b}, /*saved=*/{b, out},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& y = saved[1];
           Tensor db = grad_binary(kernels::Binary::Mul, dout, y);  // -((dout·y) / b), in that order
           update_binary(kernels::Binary::Div, db, saved[0]);
           update_neg(db);
           return {db};
         });
  return out;
}

// y = a^p        da = dout·p·a^(p-1)      (0 when p = 0, even at a = 0, as in PyTorch)
Tensor pow(const Tensor& a, float exponent) {
  // a² is the common case (variances, squared errors): a·a is exact and
  // faster than a general power.
  Tensor out = exponent == 2.0f ? binary_op(kernels::Binary::Mul, a, a, "pow")
                                : binary_op(kernels::Binary::Pow, a, exponent, "pow");
  record(out, "PowBackward", {a}, /*saved=*/{a},
         [p = exponent](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& base = saved[0];
           if (p == 0.0f) return {zeros(base.shape())};
           return {grad_binary(kernels::Binary::Mul, dout, pow(base, p - 1.0f) * p)};
         });
  return out;
}

// --- unary maps -----------------------------------------------------------------

// y = -x         dx = -dout
Tensor neg(const Tensor& x) {
  Tensor out = unary_op(kernels::Unary::Neg, x, "neg");
  record(out, "NegBackward", {x}, /*saved=*/{},
         [](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> { return {grad_neg(dout)}; });
  return out;
}

// y = eˣ         dx = dout·y
Tensor exp(const Tensor& x) {
  Tensor out = unary_op(kernels::Unary::Exp, x, "exp");
  record(out, "ExpBackward", {x}, /*saved=*/{out},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& y = saved[0];
           return {grad_binary(kernels::Binary::Mul, dout, y)};
         });
  return out;
}

// y = ln x       dx = dout / x
Tensor log(const Tensor& x) {
  Tensor out = unary_op(kernels::Unary::Log, x, "log");
  record(out, "LogBackward", {x}, /*saved=*/{x},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           return {grad_binary(kernels::Binary::Div, dout, saved[0])};
         });
  return out;
}

// y = √x         dx = dout / (2y)
Tensor sqrt(const Tensor& x) {
  Tensor out = unary_op(kernels::Unary::Sqrt, x, "sqrt");
  record(out, "SqrtBackward", {x}, /*saved=*/{out},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& y = saved[0];
           return {grad_binary(kernels::Binary::Div, dout, y * 2.0f)};
         });
  return out;
}

// y = |x|        dx = dout·sign(x)      (sign 0 = 0: no gradient at the kink)
Tensor abs(const Tensor& x) {
  Tensor out = unary_op(kernels::Unary::Abs, x, "abs");
  record(out, "AbsBackward", {x}, /*saved=*/{x},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           return {grad_binary(kernels::Binary::Mul, dout, unary_op(kernels::Unary::Sign, saved[0], "abs"))};
         });
  return out;
}

// y = tanh x     dx = dout·(1 - y²)
Tensor tanh(const Tensor& x) {
  Tensor out = unary_op(kernels::Unary::Tanh, x, "tanh");
  record(out, "TanhBackward", {x}, /*saved=*/{out},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& y = saved[0];
           return {grad_binary(kernels::Binary::Mul, dout, 1.0f - y * y)};
         });
  return out;
}

// y = σ(x) = 1 / (1 + e⁻ˣ)      dx = dout·y·(1 - y)
Tensor sigmoid(const Tensor& x) {
  Tensor out = unary_op(kernels::Unary::Sigmoid, x, "sigmoid");
  record(out, "SigmoidBackward", {x}, /*saved=*/{out},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& y = saved[0];
           Tensor dx = grad_binary(kernels::Binary::Mul, dout, y);  // (dout·y)·(1 - y), in that order
           update_binary(kernels::Binary::Mul, dx, 1.0f - y);
           return {dx};
         });
  return out;
}

// y = max(x, 0)  dx = dout·[x > 0]      (0 at x = 0)
Tensor relu(const Tensor& x) {
  Tensor out = unary_op(kernels::Unary::Relu, x, "relu");
  record(out, "ReluBackward", {x}, /*saved=*/{x},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           return {grad_binary(kernels::Binary::Mul, dout, unary_op(kernels::Unary::Step, saved[0], "relu"))};
         });
  return out;
}

// y = x·Φ(x)     dx = dout·(Φ(x) + x·φ(x))      (Φ, φ: the standard normal cdf and pdf)
Tensor gelu(const Tensor& x) {
  Tensor out = unary_op(kernels::Unary::Gelu, x, "gelu");
  record(out, "GeluBackward", {x}, /*saved=*/{x},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           return {grad_binary(kernels::Binary::Mul, dout, unary_op(kernels::Unary::GeluGrad, saved[0], "gelu"))};
         });
  return out;
}

// --- masked_fill ----------------------------------------------------------------

// y = value where mask ≠ 0, else x      dx = dout where mask = 0, else 0
// The mask broadcasts to x's shape (not the other way round): y has x's shape.
Tensor masked_fill(const Tensor& x, const IntTensor& mask, float value) {
  detail::check_input(x, "masked_fill", "x");
  detail::check_input(mask, "masked_fill", "mask");
  if (broadcast_shapes(x.shape(), mask.shape(), "masked_fill") != x.shape())
    fail("masked_fill: mask of shape {} does not broadcast to x's shape {}", mask.shape(), x.shape());
  Tensor out = x.detach().clone();
  fill_where(out, mask, value);
  // dx: dout with zeros where the mask is set, over dout when the backward holds it alone.
  record(out, "MaskedFillBackward", {x}, /*saved=*/{mask},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           Tensor dx = sole_owner(dout) ? dout : dout.detach().clone();
           fill_where(dx, saved.int_tensor(0), 0.0f);
           return {dx};
         });
  return out;
}

// --- operators ------------------------------------------------------------------

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, float b) { return add(a, b); }
Tensor operator+(float a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, float b) { return sub(a, b); }
Tensor operator-(float a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, float b) { return mul(a, b); }
Tensor operator*(float a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, float b) { return div(a, b); }
Tensor operator/(float a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }

// --- the same ops as Tensor methods (tensor.hpp): x.exp() is exp(x) ----------

Tensor Tensor::add(const Tensor& other) const { return qkv::add(*this, other); }
Tensor Tensor::add(float other) const { return qkv::add(*this, other); }
Tensor Tensor::sub(const Tensor& other) const { return qkv::sub(*this, other); }
Tensor Tensor::sub(float other) const { return qkv::sub(*this, other); }
Tensor Tensor::mul(const Tensor& other) const { return qkv::mul(*this, other); }
Tensor Tensor::mul(float other) const { return qkv::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return qkv::div(*this, other); }
Tensor Tensor::div(float other) const { return qkv::div(*this, other); }
Tensor Tensor::pow(float exponent) const { return qkv::pow(*this, exponent); }
Tensor Tensor::pow(const Tensor& exponent) const { return qkv::pow(*this, exponent); }
Tensor Tensor::neg() const { return qkv::neg(*this); }
Tensor Tensor::exp() const { return qkv::exp(*this); }
Tensor Tensor::log() const { return qkv::log(*this); }
Tensor Tensor::sqrt() const { return qkv::sqrt(*this); }
Tensor Tensor::abs() const { return qkv::abs(*this); }
Tensor Tensor::tanh() const { return qkv::tanh(*this); }
Tensor Tensor::sigmoid() const { return qkv::sigmoid(*this); }
Tensor Tensor::relu() const { return qkv::relu(*this); }
Tensor Tensor::masked_fill(const IntTensor& mask, float value) const { return qkv::masked_fill(*this, mask, value); }

}  // namespace qkv
