// Elementwise maps over float arrays: y[i] = f(x[i]) and out[i] = a[i] ∘ b[i].
//
// Broadcasting is the op layer's business; a binary kernel only needs to know,
// for each operand, whether it walks along the row (step 1) or repeats one value
// (step 0). That covers tensor∘tensor, tensor∘scalar and scalar∘tensor rows.
//
// An op is named here by an enum value; its formula is a struct in
// elementwise.cpp (its scalar form in the reference section, its SIMD form in
// the SIMD section), and one switch there binds each value to its struct. The
// enum, rather than the struct as a template argument, is what callers pass
// because the SIMD forms are written in xsimd and only src/kernels/ may see
// xsimd: the op layer picks an op by name, and the kernels stay plain
// functions compiled once, in one file.
#pragma once
#include <cstdint>

namespace qkv::kernels {

enum class Unary {
  Neg,       // -x
  Exp,       // eˣ
  Log,       // ln x
  Sqrt,      // √x
  Abs,       // |x|
  Sign,      // -1, 0 or 1 (the derivative of |x|, with 0 at 0)
  Tanh,      // tanh x
  Sigmoid,   // 1 / (1 + e⁻ˣ)
  Relu,      // max(x, 0)
  Step,      // 1 if x > 0 else 0 (the derivative of relu)
  Gelu,      // x·Φ(x) = x/2 · (1 + erf(x/√2))   (exact GELU, PyTorch's default)
  GeluGrad,  // d gelu/dx = Φ(x) + x·φ(x)
};

enum class Binary {
  Add,  // a + b
  Sub,  // a - b
  Mul,  // a * b
  Div,  // a / b
  Pow,  // a ^ b
};

// y[i] = f(x[i]) for i < n. x and y may be the same array.
void unary(Unary op, int64_t n, const float* x, float* y);
void unary_reference(Unary op, int64_t n, const float* x, float* y);

// out[i] = a[i * a_step] ∘ b[i * b_step] for i < n, with each step 0 or 1.
// out may alias a or b when that operand's step is 1.
void binary(Binary op, int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out);
void binary_reference(Binary op, int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out);

// y[i] += alpha * x[i]: gradient accumulation and optimizer steps.
void axpy(int64_t n, float alpha, const float* x, float* y);
void axpy_reference(int64_t n, float alpha, const float* x, float* y);

}  // namespace qkv::kernels
