// Matrix products: matmul, with PyTorch's rules for 1-D, 2-D and batched
// operands, and bmm. Every product here is one or more calls of kernels::gemm.
//
// Letters, as in the kernel: a is (…, M, K), b is (…, K, N), out is (…, M, N).
//   C = A·B        dA = dC·Bᵀ        dB = Aᵀ·dC
// The transposes in the backward are never materialised: gemm reads an
// operand transposed (trans_a / trans_b) as cheaply as a plain one.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/ops/broadcast.hpp>
#include <qkv/ops/linalg.hpp>
#include <qkv/ops/shape_ops.hpp>

#include <algorithm>

#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "ops/util.hpp"

namespace qkv {

namespace {

// C (M, N) = op(A) (M, K) · op(B) (K, N) on row-major arrays, where op(X) is
// Xᵀ when X's flag is set (then X is stored transposed: A as (K, M), B as (N, K)).
// C must hold zeros already when K is 0: an empty sum, the kernel is not called.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C) {
  if (M == 0 || N == 0 || K == 0) return;
  const int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
  kernels::gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, N, /*accumulate=*/false);
}

// x's shape without its last two (matrix) dims: its batch dims.
Shape batch_dims(const Shape& x) { return Shape(std::vector<int64_t>(x.begin(), x.end() - 2)); }

// Where, in a tensor of shape x (…, rows, cols), the matrix of each index of
// `batch` starts. x's batch dims broadcast to `batch`: a missing or size-1
// dim steps by 0, so every index along it reads the same matrix.
std::vector<int64_t> matrix_offsets(const Shape& x, const Shape& batch) {
  const int64_t x_batch = x.ndim() - 2, lead = batch.ndim() - x_batch;
  std::vector<int64_t> step(static_cast<size_t>(batch.ndim()), 0);
  int64_t stride = x[x.ndim() - 2] * x[x.ndim() - 1];  // one matrix
  for (int64_t d = x_batch - 1; d >= 0; --d) {
    if (x[d] != 1) step[static_cast<size_t>(d + lead)] = stride;
    stride *= x[d];
  }
  std::vector<int64_t> offsets(static_cast<size_t>(batch.numel()));
  for (int64_t i = 0; i < batch.numel(); ++i) {
    int64_t rest = i, offset = 0;  // unravel i into batch's dims, last dim fastest
    for (int64_t d = batch.ndim() - 1; d >= 0; --d) {
      offset += (rest % batch[d]) * step[static_cast<size_t>(d)];
      rest /= batch[d];
    }
    offsets[static_cast<size_t>(i)] = offset;
  }
  return offsets;
}

// C[i] = op(A[i])·op(B[i]) for every matrix i of C (…, M, N); A's and B's
// batch dims broadcast to C's.
void gemm_batched(bool trans_a, bool trans_b, const Tensor& A, const Tensor& B, Tensor& C) {
  const Shape& c = C.shape();
  const int64_t M = c[c.ndim() - 2], N = c[c.ndim() - 1];
  const int64_t K = trans_a ? A.shape()[A.dim() - 2] : A.shape()[A.dim() - 1];
  const Shape batch = batch_dims(c);
  const std::vector<int64_t> a_at = matrix_offsets(A.shape(), batch), b_at = matrix_offsets(B.shape(), batch);
  for (int64_t i = 0; i < batch.numel(); ++i) {
    size_t k = static_cast<size_t>(i);
    gemm(trans_a, trans_b, M, N, K, A.data() + a_at[k], B.data() + b_at[k], C.data() + i * M * N);
  }
}

// batch + (rows, cols)
Shape with_matrix(const Shape& batch, int64_t rows, int64_t cols) {
  std::vector<int64_t> dims = batch.dims();
  dims.insert(dims.end(), {rows, cols});
  return Shape(dims);
}

// (…, M, K)·(K, N) -> (…, M, N). Every row of a meets the same b, so a's
// batch dims fold into its rows: ONE GEMM of (R, K)·(K, N), R = all of a's
// rows. This is nn::Linear's forward, the hottest product in a model.
//   da = dout·bᵀ   (R, N)·(N, K) -> (R, K)
//   db = aᵀ·dout   (K, R)·(R, N) -> (K, N): the sum over the batch is the GEMM's own sum over R
Tensor matmul_folded(const Tensor& a, const Tensor& b) {
  const int64_t K = b.shape()[0], N = b.shape()[1];
  int64_t R = 1;
  for (int64_t d = 0; d + 1 < a.dim(); ++d) R *= a.shape()[d];
  std::vector<int64_t> dims = a.shape().dims();
  dims.back() = N;
  Tensor out = zeros(Shape(dims));
  gemm(false, false, R, N, K, a.data(), b.data(), out.data());  // (R, K)·(K, N)
  record(out, "MatmulBackward", {a, b}, [a, b, R, K, N](const Tensor& dout) -> std::vector<Tensor> {
    Tensor da, db;
    if (a.requires_grad()) {
      da = zeros(a.shape());
      gemm(false, true, R, K, N, dout.data(), b.data(), da.data());  // (R, N)·(K, N)ᵀ
    }
    if (b.requires_grad()) {
      db = zeros(b.shape());
      gemm(true, false, K, N, R, a.data(), dout.data(), db.data());  // (R, K)ᵀ·(R, N)
    }
    return {da, db};
  });
  return out;
}

// (…, M, K)·(…, K, N) -> (…, M, N), batch dims broadcasting: one GEMM per
// output matrix. The gradients are first computed for the full batch, then
// summed back over the dims each operand was broadcast along.
//   da = sum_to(dout·bᵀ, a.shape)      db = sum_to(aᵀ·dout, b.shape)
Tensor matmul_batched(const Tensor& a, const Tensor& b, const Shape& batch, const char* backward_name) {
  const int64_t M = a.shape()[a.dim() - 2], K = a.shape()[a.dim() - 1], N = b.shape()[b.dim() - 1];
  Tensor out = zeros(with_matrix(batch, M, N));
  gemm_batched(false, false, a, b, out);
  record(out, backward_name, {a, b}, [a, b, batch, M, K, N](const Tensor& dout) -> std::vector<Tensor> {
    Tensor da, db;
    if (a.requires_grad()) {
      Tensor da_full = zeros(with_matrix(batch, M, K));
      gemm_batched(false, true, dout, b, da_full);  // (…, M, N)·(…, N, K)
      da = sum_to(da_full, a.shape());
    }
    if (b.requires_grad()) {
      Tensor db_full = zeros(with_matrix(batch, K, N));
      gemm_batched(true, false, a, dout, db_full);  // (…, K, M)·(…, M, N)
      db = sum_to(db_full, b.shape());
    }
    return {da, db};
  });
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  detail::check_input(a, "matmul", "a");
  detail::check_input(b, "matmul", "b");
  if (a.dim() == 0 || b.dim() == 0) fail("matmul: {} x {}: both operands need at least 1 dim", a.shape(), b.shape());
  const int64_t ka = a.shape()[a.dim() - 1];
  const int64_t kb = b.dim() == 1 ? b.shape()[0] : b.shape()[b.dim() - 2];
  if (ka != kb) fail("matmul: {} x {}: inner sizes {} and {} differ", a.shape(), b.shape(), ka, kb);

  // A 1-D operand is a matrix with one row (left) or one column (right); that
  // size-1 dim is dropped from the result. 1-D·1-D is then (1, K)·(K, 1) -> ():
  // the dot product.
  if (a.dim() == 1 || b.dim() == 1) {
    Tensor a2 = a.dim() == 1 ? reshape(a, {1, ka}) : a;  // (K) -> (1, K)
    Tensor b2 = b.dim() == 1 ? reshape(b, {kb, 1}) : b;  // (K) -> (K, 1)
    Tensor out = matmul(a2, b2);                         // (…, M, N)
    std::vector<int64_t> dims = out.shape().dims();
    if (a.dim() == 1) dims.erase(dims.end() - 2);  // drop M = 1
    if (b.dim() == 1) dims.pop_back();             // drop N = 1
    return reshape(out, Shape(dims));
  }

  if (b.dim() == 2) return matmul_folded(a, b);

  const Shape batch_a = batch_dims(a.shape()), batch_b = batch_dims(b.shape());
  for (int64_t i = 1; i <= std::min(batch_a.ndim(), batch_b.ndim()); ++i) {
    int64_t sa = batch_a[batch_a.ndim() - i], sb = batch_b[batch_b.ndim() - i];
    if (sa != sb && sa != 1 && sb != 1)
      fail("matmul: {} x {}: batch dims {} and {} do not broadcast", a.shape(), b.shape(), batch_a, batch_b);
  }
  return matmul_batched(a, b, broadcast_shapes(batch_a, batch_b, "matmul"), "MatmulBackward");
}

// y = x·Wᵀ + b: x (…, K) folds to (R, K) rows as in matmul_folded.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  detail::check_input(x, "linear", "x");
  detail::check_input(weight, "linear", "weight");
  if (x.dim() == 0 || weight.dim() != 2)
    fail("linear: input {} and weight {}: need an input with ≥ 1 dim and a 2-d weight (out, in)", x.shape(),
         weight.shape());
  const int64_t K = weight.shape()[1], N = weight.shape()[0];
  if (x.shape()[x.dim() - 1] != K)
    fail("linear: input {} x weight {}: the input has {} features, the weight expects {}", x.shape(), weight.shape(),
         x.shape()[x.dim() - 1], K);
  if (bias.defined() && bias.shape() != Shape{N})
    fail("linear: bias {} does not fit weight {}: expected ({})", bias.shape(), weight.shape(), N);
  int64_t R = 1;  // rows: the product of x's leading dims
  for (int64_t d = 0; d + 1 < x.dim(); ++d) R *= x.shape()[d];
  std::vector<int64_t> dims = x.shape().dims();
  dims.back() = N;
  Tensor out = zeros(Shape(dims));
  gemm(false, true, R, N, K, x.data(), weight.data(), out.data());  // (R, K)·(N, K)ᵀ -> (R, N)
  if (bias.defined()) {
    for (int64_t r = 0; r < R; ++r)
      kernels::binary(kernels::Binary::Add, N, out.data() + r * N, 1, bias.data(), 1, out.data() + r * N);
  }
  record(out, "LinearBackward", {x, weight, bias},
         [x, weight, bias, R, N, K](const Tensor& dout) -> std::vector<Tensor> {
           Tensor dx, dw, db;
           if (x.requires_grad()) {
             dx = zeros(x.shape());
             gemm(false, false, R, K, N, dout.data(), weight.data(), dx.data());  // (R, N)·(N, K)
           }
           if (weight.requires_grad()) {
             dw = zeros(weight.shape());
             gemm(true, false, N, K, R, dout.data(), x.data(), dw.data());  // (R, N)ᵀ·(R, K)
           }
           if (bias.defined() && bias.requires_grad()) db = sum_to(dout, bias.shape());
           return {dx, dw, db};
         });
  return out;
}

// (B, M, K)·(B, K, N) -> (B, M, N): matmul without broadcasting or 1-D rules.
Tensor bmm(const Tensor& a, const Tensor& b) {
  detail::check_input(a, "bmm", "a");
  detail::check_input(b, "bmm", "b");
  if (a.dim() != 3 || b.dim() != 3) fail("bmm: {} x {}: both operands must be 3-d", a.shape(), b.shape());
  if (a.shape()[0] != b.shape()[0])
    fail("bmm: {} x {}: batch sizes {} and {} differ", a.shape(), b.shape(), a.shape()[0], b.shape()[0]);
  if (a.shape()[2] != b.shape()[1])
    fail("bmm: {} x {}: inner sizes {} and {} differ", a.shape(), b.shape(), a.shape()[2], b.shape()[1]);
  return matmul_batched(a, b, Shape{a.shape()[0]}, "BmmBackward");
}

// --- as Tensor methods (tensor.hpp): a.matmul(b) is matmul(a, b) -----------------

Tensor Tensor::matmul(const Tensor& other) const { return qkv::matmul(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return qkv::bmm(*this, other); }

}  // namespace qkv
