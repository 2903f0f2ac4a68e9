// Matrix products: matmul, with PyTorch's rules for 1-D, 2-D and batched
// operands, bmm, and linear. Every product here is one or more calls of
// kernels::gemm.
//
// Letters, as in the kernel: a is (…, M, K), b is (…, K, N), out is (…, M, N).
//   C = A·B        dA = dC·Bᵀ        dB = Aᵀ·dC
// The transposes in the backward are never materialised: gemm reads an
// operand transposed (trans_a / trans_b) as cheaply as a plain one. The
// same flags, given by the caller (MatmulOptions), spare the forward the
// copy that transpose() makes: q·kᵀ is read straight from k.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/ops/broadcast.hpp>
#include <qkv/ops/linalg.hpp>
#include <qkv/ops/shape_ops.hpp>

#include <algorithm>
#include <string>

#include "kernels/gemm.hpp"
#include "kernels/reduce.hpp"
#include "ops/util.hpp"

namespace qkv {

namespace {

// C (M, N) = op(A) (M, K) · op(B) (K, N) on row-major arrays, where op(X) is
// Xᵀ when X's flag is set (then X is stored transposed: A as (K, M), B as (N, K)).
// With accumulate, C += the product. C must hold zeros already when K is 0
// (unless accumulating): an empty sum, the kernel is not called.
void product_into(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
                  bool accumulate = false) {
  if (M == 0 || N == 0 || K == 0) return;
  const int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
  kernels::gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, N, accumulate);
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
// batch dims broadcast to C's. One kernel call for the whole batch, which
// spreads the matrices over the threads.
void batched_product_into(bool trans_a, bool trans_b, const Tensor& A, const Tensor& B, Tensor& C) {
  const Shape& c = C.shape();
  const int64_t M = c[c.ndim() - 2], N = c[c.ndim() - 1];
  const int64_t K = trans_a ? A.shape()[A.dim() - 2] : A.shape()[A.dim() - 1];
  const Shape batch = batch_dims(c);
  const std::vector<int64_t> a_at = matrix_offsets(A.shape(), batch), b_at = matrix_offsets(B.shape(), batch);
  const int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
  kernels::gemm_batched(trans_a, trans_b, batch.numel(), M, N, K, A.data(), a_at.data(), lda, B.data(), b_at.data(),
                        ldb, C.data(), M * N, N, /*accumulate=*/false);
}

// batch + (rows, cols)
Shape with_matrix(const Shape& batch, int64_t rows, int64_t cols) {
  std::vector<int64_t> dims = batch.dims();
  dims.insert(dims.end(), {rows, cols});
  return Shape(dims);
}

// The output of a product with inner size K, for the GEMM to write: left
// uninitialised, since the GEMM writes every element, except when K is 0
// (an empty sum, where the kernel is not called): then zeros. `op` is named
// if the shape cannot be allocated.
Tensor product_output(const Shape& shape, int64_t K, const char* op) {
  Tensor out = Tensor::empty(shape, op);
  if (K == 0) std::fill_n(out.data(), out.numel(), 0.0f);
  return out;
}

// Z[j] += op(X[i])·op(Y[i]) for every matrix i of the full batch `batch`,
// j being the matrix of Z that i was broadcast from (Z's batch dims
// broadcast to `batch`; Z holds zeros on entry). This is the gradient of an
// operand that a product broadcast: the sum over the broadcast dims happens
// in the GEMM's accumulator (accumulate = true), where a (…, rows, cols)
// temporary over the whole batch, then summed down, would cost a pass over
// memory and the memory itself. The order of the sum is fixed: batch order.
void summed_product_into(bool trans_x, bool trans_y, const Tensor& X, const Tensor& Y, Tensor& Z, const Shape& batch) {
  const Shape& z = Z.shape();
  const int64_t M = z[z.ndim() - 2], N = z[z.ndim() - 1];
  const int64_t K = trans_x ? X.shape()[X.dim() - 2] : X.shape()[X.dim() - 1];
  if (M == 0 || N == 0 || K == 0) return;
  const int64_t ldx = trans_x ? M : K, ldy = trans_y ? K : N;
  const std::vector<int64_t> x_at = matrix_offsets(X.shape(), batch), y_at = matrix_offsets(Y.shape(), batch),
                             z_at = matrix_offsets(z, batch);
  for (size_t i = 0; i < x_at.size(); ++i)
    kernels::gemm(trans_x, trans_y, M, N, K, X.data() + x_at[i], ldx, Y.data() + y_at[i], ldy, Z.data() + z_at[i], N,
                  /*accumulate=*/true);
}

// Z = the sum, over the dims of `batch` that Z's shape lacks or has as 1, of
// op(X)·op(Y): one GEMM per matrix straight into Z when nothing was
// broadcast, else summed in the GEMM's accumulator (summed_product_into).
Tensor batched_product(bool trans_x, bool trans_y, const Tensor& X, const Tensor& Y, const Shape& z_shape,
                       const Shape& batch) {
  const int64_t K = trans_x ? X.shape()[X.dim() - 2] : X.shape()[X.dim() - 1];
  if (batch_dims(z_shape) == batch) {
    Tensor Z = product_output(z_shape, K, "matmul");
    batched_product_into(trans_x, trans_y, X, Y, Z);
    return Z;
  }
  Tensor Z = zeros(z_shape);
  summed_product_into(trans_x, trans_y, X, Y, Z, batch);
  return Z;
}

// (…, M, K)·op(b) -> (…, M, N), b 2-D: (K, N), or (N, K) read transposed.
// Every row of a meets the same b, so a's batch dims fold into its rows: ONE
// GEMM of (R, K)·(K, N), R = all of a's rows. This is nn::Linear's forward,
// the hottest product in a model.
//   da = dout·op(b)ᵀ   (R, N)·(N, K) -> (R, K)
//   db = aᵀ·dout       (K, R)·(R, N) -> (K, N): the sum over the batch is the GEMM's own sum over R
//   (transposed b: db = doutᵀ·a, (N, R)·(R, K) -> (N, K))
Tensor matmul_folded(const Tensor& a, const Tensor& b, bool trans_b) {
  const int64_t K = trans_b ? b.shape()[1] : b.shape()[0], N = trans_b ? b.shape()[0] : b.shape()[1];
  int64_t R = 1;
  for (int64_t d = 0; d + 1 < a.dim(); ++d) R *= a.shape()[d];
  std::vector<int64_t> dims = a.shape().dims();
  dims.back() = N;
  Tensor out = product_output(Shape(dims), K, "matmul");
  product_into(false, trans_b, R, N, K, a.data(), b.data(), out.data());  // (R, K)·op(b)
  record(out, "MatmulBackward", {a, b}, /*saved=*/{a, b},
         [trans_b, R, K, N](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& A = saved[0];
           const Tensor& B = saved[1];
           Tensor dA, dB;
           if (A.requires_grad()) {
             dA = product_output(A.shape(), N, "matmul");
             product_into(false, !trans_b, R, K, N, dout.data(), B.data(), dA.data());  // (R, N)·op(b)ᵀ
           }
           if (B.requires_grad()) {
             dB = product_output(B.shape(), R, "matmul");
             if (trans_b)
               product_into(true, false, N, K, R, dout.data(), A.data(), dB.data());  // (R, N)ᵀ·(R, K)
             else
               product_into(true, false, K, N, R, A.data(), dout.data(), dB.data());  // (R, K)ᵀ·(R, N)
           }
           return {dA, dB};
         });
  return out;
}

// op(a) (…, M, K)·op(b) (…, K, N) -> (…, M, N), batch dims broadcasting: one
// GEMM per output matrix. With G = dout, the gradients of op(a) and op(b)
// are G·op(b)ᵀ and op(a)ᵀ·G; an operand stored transposed takes the
// transpose of its one, which is again a product of the stored arrays:
//   da = G·op(b)ᵀ          or, a transposed,  da = op(b)·Gᵀ   (…, K, M)
//   db = op(a)ᵀ·G          or, b transposed,  db = Gᵀ·op(a)   (…, N, K)
// An operand broadcast along batch dims gets the sum over them
// (batched_product). Each flag below says how the GEMM reads a stored array:
// op(b)ᵀ is b as stored when b is transposed, b read transposed otherwise.
Tensor matmul_batched(const Tensor& a, const Tensor& b, const Shape& batch, bool trans_a, bool trans_b, const char* op,
                      const char* backward_name) {
  const Shape &sa = a.shape(), &sb = b.shape();
  const int64_t M = trans_a ? sa[sa.ndim() - 1] : sa[sa.ndim() - 2];
  const int64_t K = trans_a ? sa[sa.ndim() - 2] : sa[sa.ndim() - 1];
  const int64_t N = trans_b ? sb[sb.ndim() - 2] : sb[sb.ndim() - 1];
  Tensor out = product_output(with_matrix(batch, M, N), K, op);
  batched_product_into(trans_a, trans_b, a, b, out);
  record(out, backward_name, {a, b}, /*saved=*/{a, b},
         [batch, trans_a, trans_b](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& A = saved[0];
           const Tensor& B = saved[1];
           Tensor dA, dB;
           if (A.requires_grad())
             dA = trans_a ? batched_product(trans_b, true, B, dout, A.shape(), batch)     // op(b)·Gᵀ
                          : batched_product(false, !trans_b, dout, B, A.shape(), batch);  // G·op(b)ᵀ
           if (B.requires_grad())
             dB = trans_b ? batched_product(true, trans_a, dout, A, B.shape(), batch)     // Gᵀ·op(a)
                          : batched_product(!trans_a, false, A, dout, B.shape(), batch);  // op(a)ᵀ·G
           return {dA, dB};
         });
  return out;
}

// "(2, 3)" or, read transposed, "(2, 3)ᵀ": how the errors show an operand.
std::string operand(const Tensor& x, bool transposed) { return fmt::format("{}{}", x.shape(), transposed ? "ᵀ" : ""); }

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, MatmulOptions options) {
  detail::check_input(a, "matmul", "a");
  detail::check_input(b, "matmul", "b");
  const bool ta = options.transpose_a, tb = options.transpose_b;
  if (a.dim() == 0 || b.dim() == 0) fail("matmul: {} x {}: both operands need at least 1 dim", a.shape(), b.shape());
  if ((ta && a.dim() < 2) || (tb && b.dim() < 2))
    fail("matmul: {} x {}: transpose_{} needs an operand with at least 2 dims", a.shape(), b.shape(),
         ta && a.dim() < 2 ? "a" : "b");
  const int64_t ka = ta ? a.shape()[a.dim() - 2] : a.shape()[a.dim() - 1];
  const int64_t kb = b.dim() == 1 ? b.shape()[0] : tb ? b.shape()[b.dim() - 1] : b.shape()[b.dim() - 2];
  if (ka != kb) fail("matmul: {} x {}: inner sizes {} and {} differ", operand(a, ta), operand(b, tb), ka, kb);

  // A 1-D operand is a matrix with one row (left) or one column (right); that
  // size-1 dim is dropped from the result. 1-D·1-D is then (1, K)·(K, 1) -> ():
  // the dot product.
  if (a.dim() == 1 || b.dim() == 1) {
    Tensor a2 = a.dim() == 1 ? reshape(a, {1, ka}) : a;  // (K) -> (1, K)
    Tensor b2 = b.dim() == 1 ? reshape(b, {kb, 1}) : b;  // (K) -> (K, 1)
    Tensor out = matmul(a2, b2, options);                // (…, M, N)
    std::vector<int64_t> dims = out.shape().dims();
    if (a.dim() == 1) dims.erase(dims.end() - 2);  // drop M = 1
    if (b.dim() == 1) dims.pop_back();             // drop N = 1
    return reshape(out, Shape(dims));
  }

  // a's rows fold into one GEMM unless a is read transposed (its rows are then columns).
  if (b.dim() == 2 && !ta) return matmul_folded(a, b, tb);

  const Shape batch_a = batch_dims(a.shape()), batch_b = batch_dims(b.shape());
  for (int64_t i = 1; i <= std::min(batch_a.ndim(), batch_b.ndim()); ++i) {
    int64_t sa = batch_a[batch_a.ndim() - i], sb = batch_b[batch_b.ndim() - i];
    if (sa != sb && sa != 1 && sb != 1)
      fail("matmul: {} x {}: batch dims {} and {} do not broadcast", operand(a, ta), operand(b, tb), batch_a, batch_b);
  }
  return matmul_batched(a, b, broadcast_shapes(batch_a, batch_b, "matmul"), ta, tb, "matmul", "MatmulBackward");
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
  Tensor out;
  if (bias.defined()) {
    // Every row starts as the bias and the GEMM adds the product into it
    // (accumulate): one pass over out fewer than adding b afterwards.
    out = Tensor::empty(Shape(dims), "linear");
    for (int64_t r = 0; r < R; ++r) std::copy_n(bias.data(), N, out.data() + r * N);
    product_into(false, true, R, N, K, x.data(), weight.data(), out.data(), /*accumulate=*/true);  // b + (R, K)·(N, K)ᵀ
  } else {
    out = product_output(Shape(dims), K, "linear");
    product_into(false, true, R, N, K, x.data(), weight.data(), out.data());  // (R, K)·(N, K)ᵀ -> (R, N)
  }
  record(out, "LinearBackward", {x, weight, bias}, /*saved=*/{x, weight},
         [bias_grad = bias.defined() && bias.requires_grad(), R, N, K](const SavedTensors& saved,
                                                                       const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& X = saved[0];  // (…, K)
           const Tensor& W = saved[1];  // (N, K)
           Tensor dx, dw, db;
           if (X.requires_grad()) {
             dx = product_output(X.shape(), N, "linear");
             product_into(false, false, R, K, N, dout.data(), W.data(), dx.data());  // (R, N)·(N, K)
           }
           if (W.requires_grad()) {
             dw = product_output(W.shape(), R, "linear");
             product_into(true, false, N, K, R, dout.data(), X.data(), dw.data());  // (R, N)ᵀ·(R, K)
           }
           if (bias_grad) {
             // Σ over dout's R rows, read in place: (1, R, N) -> (N). (sum_to would copy dout first.)
             db = Tensor::empty(Shape{N});
             kernels::reduce(kernels::Reduce::Sum, 1, R, N, dout.data(), db.data());
           }
           return {dx, dw, db};
         });
  return out;
}

// op(a) (B, M, K)·op(b) (B, K, N) -> (B, M, N): matmul without broadcasting or 1-D rules.
Tensor bmm(const Tensor& a, const Tensor& b, MatmulOptions options) {
  detail::check_input(a, "bmm", "a");
  detail::check_input(b, "bmm", "b");
  const bool ta = options.transpose_a, tb = options.transpose_b;
  if (a.dim() != 3 || b.dim() != 3) fail("bmm: {} x {}: both operands must be 3-d", operand(a, ta), operand(b, tb));
  if (a.shape()[0] != b.shape()[0])
    fail("bmm: {} x {}: batch sizes {} and {} differ", operand(a, ta), operand(b, tb), a.shape()[0], b.shape()[0]);
  const int64_t ka = a.shape()[ta ? 1 : 2], kb = b.shape()[tb ? 2 : 1];
  if (ka != kb) fail("bmm: {} x {}: inner sizes {} and {} differ", operand(a, ta), operand(b, tb), ka, kb);
  return matmul_batched(a, b, Shape{a.shape()[0]}, ta, tb, "bmm", "BmmBackward");
}

// --- as Tensor methods (tensor.hpp): a.matmul(b) is matmul(a, b) -----------------

Tensor Tensor::matmul(const Tensor& other) const { return qkv::matmul(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return qkv::bmm(*this, other); }

}  // namespace qkv
