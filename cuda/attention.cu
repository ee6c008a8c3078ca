// Multi-head self-attention with cuBLAS (ops/attention.cpp), the layout of
// the CPU's (cpu/attention.cpp): aux per sample holds qkv [T][3E], the
// probabilities P [H][T][T] and the context C [T][E].
//
// The projections are one product over all n*T steps. The scores and the
// context are strided-batched products: head h of sample s starts at
// s*T*3E + h*D in qkv, so one stride reaches every sample but not every
// head; each product is H batched calls of n (instead of copying Q, K and V
// head-major first). Masking and softmax are one kernel, a block per row of
// scores, its max and sum reduced in float by block_max and block_sum; its
// backward the same, about a pivot key (core/math.h attention_dz). Row r
// of the n*H*T rows is query r % T of item r / T = (sample, head).
//
// cuBLAS is column-major; a row-major matrix is, read column-major, its
// transpose, so row-major C = op(A) op(B) is the column-major product
// C^T = op(B)^T op(A)^T: gemm below swaps the operands and sizes.
//
// At bf16 and fp16 every product's operands are 16-bit copies in the
// workspace (low_precision.h), made once per pass each: x, the weights,
// qkv, P, C and, backward, dy, dC, dP (after the softmax) and dqkv. Scores,
// softmax and its gradient stay float32.
#include "low_precision.h"
#include "ops.h"

namespace snn {
namespace cu {
namespace {

struct Dims {
    int64_t t, e, h, d;
    float scale;
    bool causal;
};

Dims dims_of(const Layer &l) {
    const int64_t d = l.in.c / l.heads;
    return {l.in.h, l.in.c, l.heads, d, (float)(1.0 / sqrt((double)d)), l.causal};
}

// Row r of the scores in place: p_j = softmax_j(scale * s) over the keys its
// query sees (core/math.h attention_keys), 0 for the others.
__global__ void attention_softmax_forward_kernel(float *p, const int32_t *lengths, int64_t steps, int64_t heads,
                                                 float scale, bool causal) {
    __shared__ float buf[kThreads];
    const int64_t r = blockIdx.x, t = r % steps, sample = r / steps / heads;
    const int64_t keys = attention_keys(t, lengths ? lengths[sample] : steps, steps, causal);
    float *row = p + r * steps;
    float most = -INFINITY;
    for (int64_t j = threadIdx.x; j < keys; j += kThreads) {
        row[j] = scale * row[j];
        most = fmaxf(most, row[j]);
    }
    most = block_max(most, buf);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < keys; j += kThreads) {
        row[j] = softmax_exp(row[j], most);
        sum += row[j];
    }
    const float total = block_sum(sum, buf);
    for (int64_t j = threadIdx.x; j < steps; j += kThreads) row[j] = j < keys ? softmax_y(row[j], total) : 0.0f;
}

// Row r of dP in place: ds = scale * dz (core/math.h attention_dz), 0 at
// masked keys. The pivot m is the first key with the row's largest p.
__global__ void attention_softmax_backward_kernel(const float *p, float *dp, const int32_t *lengths,
                                                  int64_t steps, int64_t heads, float scale, bool causal) {
    __shared__ float buf[kThreads];
    const int64_t r = blockIdx.x, t = r % steps, sample = r / steps / heads;
    const int64_t keys = attention_keys(t, lengths ? lengths[sample] : steps, steps, causal);
    const float *prow = p + r * steps;
    float *row = dp + r * steps;
    float most = -INFINITY;
    for (int64_t j = threadIdx.x; j < keys; j += kThreads) most = fmaxf(most, prow[j]);
    most = block_max(most, buf);
    float first = -INFINITY;  // -(index of the first key with p == most)
    for (int64_t j = threadIdx.x; j < keys; j += kThreads)
        if (prow[j] == most) first = fmaxf(first, -(float)j);
    const int64_t m = (int64_t)-block_max(first, buf);
    const float pivot = row[m];
    float rest = 0.0f;
    for (int64_t j = threadIdx.x; j < keys; j += kThreads) rest += prow[j] * (row[j] - pivot);
    // block_sum's barriers also see every thread read row[m] before it is written.
    const float total = block_sum(rest, buf);
    for (int64_t j = threadIdx.x; j < steps; j += kThreads)
        row[j] = j < keys ? scale * attention_dz(prow[j], row[j], pivot, total) : 0.0f;
}

// Row-major C[M][N] = op(A) op(B), `batch` times with the given strides
// (values), A and B operands at p.
void gemm(CudaStream &cs, Precision p, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void *A,
          int64_t lda, int64_t stride_a, const void *B, int64_t ldb, int64_t stride_b, float *C, int64_t ldc,
          int64_t stride_c, int64_t batch, const char *what) {
    const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (batch == 1)
        gemm_at(cs, p, opb, opa, N, M, K, 1.0f, B, ldb, A, lda, 0.0f, C, ldc, what);
    else
        gemm_batched_at(cs, p, opb, opa, N, M, K, 1.0f, B, ldb, stride_b, A, lda, stride_a, 0.0f, C, ldc, stride_c,
                        batch, what);
}

void gemm1(CudaStream &cs, Precision p, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void *A,
           int64_t lda, const void *B, int64_t ldb, float *C, int64_t ldc, const char *what) {
    gemm(cs, p, ta, tb, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, what);
}

struct View {
    float *qkv, *p, *ctx;
    const float *w_in, *b_in, *w_out, *b_out;
};

View view_of(const OpArgs &a, const Dims &d) {
    const float *w = a.params + a.l->weight_offset;
    float *aux = aux_per_sample(a);
    const size_t rows = (size_t)(a.n * d.t);
    float *p = aux + rows * (size_t)(3 * d.e);
    return {aux, p, p + (size_t)(a.n * d.h * d.t * d.t), w, w + 3 * d.e * d.e, w + 3 * d.e * d.e + 3 * d.e,
            w + 4 * d.e * d.e + 3 * d.e};
}

unsigned int rows_grid(const OpArgs &a, const Dims &d) { return grid_of(a.n * d.h * d.t, "attention rows"); }

// The backward float scratch: dC [n][T][E], dqkv [n][T][3E], dP [n][H][T][T].
size_t float_bytes(const Dims &d, int64_t n, bool backward) {
    return backward ? aligned16((size_t)(n * d.t * (4 * d.e + d.h * d.t)) * sizeof(float)) : 0;
}

// Workspace: the float scratch, then at a low precision the 16-bit copies:
// forward x, W_in, qkv, P, C, W_out; backward also dy, dC, dP and dqkv.
void *attention_plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool backward, Precision p,
                     size_t *workspace_bytes) {
    const Dims d = dims_of(l);
    const size_t rows = (size_t)(max_batch * d.t), e = (size_t)d.e, probs = (size_t)(max_batch * d.h * d.t * d.t);
    const size_t copies = backward ? low_bytes(p, {rows * e, 3 * e * e, rows * 3 * e, probs, rows * e, e * e,
                                                   rows * e, rows * e, probs, rows * 3 * e})
                                   : low_bytes(p, {rows * e, 3 * e * e, rows * 3 * e, probs, rows * e, e * e});
    *workspace_bytes = float_bytes(d, max_batch, backward) + copies;
    return nullptr;
}

// The 16-bit copies of one pass, in the order the plan counts them.
struct Copies {
    uint16_t *x, *w_in, *qkv, *p, *ctx, *w_out, *dy, *dctx, *dp, *dqkv;
};

Copies copies_of(const OpArgs &a, const Dims &d, bool backward) {
    LowScratch low(a.precision, a.workspace, float_bytes(d, a.n, backward));
    const int64_t rows = a.n * d.t, probs = a.n * d.h * d.t * d.t;
    Copies c{};
    c.x = low.take(rows * d.e);
    c.w_in = low.take(3 * d.e * d.e);
    c.qkv = low.take(rows * 3 * d.e);
    c.p = low.take(probs);
    c.ctx = low.take(rows * d.e);
    c.w_out = low.take(d.e * d.e);
    if (backward) {
        c.dy = low.take(rows * d.e);
        c.dctx = low.take(rows * d.e);
        c.dp = low.take(probs);
        c.dqkv = low.take(rows * 3 * d.e);
    }
    return c;
}

// qkv = x W_in^T + b_in ; S_h = Q_h K_h^T ; P = masked softmax(scale S) ;
// C_h = P_h V_h ; y = C W_out^T + b_out
void attention_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Dims d = dims_of(*a.l);
    if (a.n <= 0) return;
    const Precision pr = a.precision;
    const View v = view_of(a, d);
    const Copies c = copies_of(a, d, false);
    const int64_t rows = a.n * d.t, ld = 3 * d.e, tt = d.t * d.t, probs = a.n * d.h * tt;
    gemm1(cs, pr, false, true, rows, ld, d.e, operand(cs, pr, a.x[0], (size_t)(rows * d.e), c.x), d.e,
          operand(cs, pr, v.w_in, (size_t)(ld * d.e), c.w_in), d.e, v.qkv, ld, "cublasGemm (attention in-projection)");
    bias_activation(cs.stream, v.qkv, nullptr, v.b_in, (size_t)(rows * ld), ld, 1, Act::identity);
    const void *qkv = operand(cs, pr, v.qkv, (size_t)(rows * ld), c.qkv);
    for (int64_t h = 0; h < d.h; ++h) {
        const void *q = operand_at(pr, qkv, h * d.d), *k = operand_at(pr, q, d.e);
        gemm(cs, pr, false, true, d.t, d.t, d.d, q, ld, d.t * ld, k, ld, d.t * ld, v.p + h * tt, d.t, d.h * tt, a.n,
             "cublasGemmStridedBatched (attention scores)");
    }
    SNN_LAUNCH(attention_softmax_forward_kernel, rows_grid(a, d), kThreads, cs.stream, v.p, a.lengths, d.t, d.h,
               d.scale, d.causal);
    check_launch("attention_softmax_forward kernel");
    const void *p = operand(cs, pr, v.p, (size_t)probs, c.p);
    for (int64_t h = 0; h < d.h; ++h) {
        const void *val = operand_at(pr, qkv, 2 * d.e + h * d.d);
        gemm(cs, pr, false, false, d.t, d.d, d.t, operand_at(pr, p, h * tt), d.t, d.h * tt, val, ld, d.t * ld,
             v.ctx + h * d.d, d.e, d.t * d.e, a.n, "cublasGemmStridedBatched (attention context)");
    }
    gemm1(cs, pr, false, true, rows, d.e, d.e, operand(cs, pr, v.ctx, (size_t)(rows * d.e), c.ctx), d.e,
          operand(cs, pr, v.w_out, (size_t)(d.e * d.e), c.w_out), d.e, a.y, d.e,
          "cublasGemm (attention out-projection)");
    bias_activation(cs.stream, a.y, nullptr, v.b_out, (size_t)(rows * d.e), d.e, 1, Act::identity);
}

// dW_out = dy^T C ; db_out = colsum dy ; dC = dy W_out ;
// dP_h = dC_h V_h^T ; dV_h = P_h^T dC_h ; dS = scale P (dP - rowsum(dP P)) about a pivot ;
// dQ_h = dS_h K_h ; dK_h = dS_h^T Q_h ;
// dW_in = dqkv^T x ; db_in = colsum dqkv ; dx = dqkv W_in
void attention_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Dims d = dims_of(*a.l);
    if (a.n <= 0) return;
    const Precision pr = a.precision;
    const View v = view_of(a, d);
    const Copies c = copies_of(a, d, true);
    const int64_t rows = a.n * d.t, ld = 3 * d.e, tt = d.t * d.t, probs = a.n * d.h * tt;
    float *g = a.grads + a.l->weight_offset;
    float *dw_in = g, *db_in = g + 3 * d.e * d.e, *dw_out = db_in + 3 * d.e, *db_out = dw_out + d.e * d.e;
    float *dctx = static_cast<float *>(a.workspace), *dqkv = dctx + rows * d.e, *dp = dqkv + rows * ld;
    const void *dy = operand(cs, pr, a.dy, (size_t)(rows * d.e), c.dy);
    gemm1(cs, pr, true, false, d.e, d.e, rows, dy, d.e, operand(cs, pr, v.ctx, (size_t)(rows * d.e), c.ctx), d.e,
          dw_out, d.e, "cublasGemm (attention dW_out)");
    channel_sums(cs.stream, cs.sums, db_out, a.dy, rows, d.e, 1);
    gemm1(cs, pr, false, false, rows, d.e, d.e, dy, d.e, operand(cs, pr, v.w_out, (size_t)(d.e * d.e), c.w_out), d.e,
          dctx, d.e, "cublasGemm (attention dC)");
    const void *qkv = operand(cs, pr, v.qkv, (size_t)(rows * ld), c.qkv);
    const void *p = operand(cs, pr, v.p, (size_t)probs, c.p);
    const void *dctx_op = operand(cs, pr, dctx, (size_t)(rows * d.e), c.dctx);
    for (int64_t h = 0; h < d.h; ++h) {
        const void *val = operand_at(pr, qkv, 2 * d.e + h * d.d), *dc = operand_at(pr, dctx_op, h * d.d);
        gemm(cs, pr, false, true, d.t, d.t, d.d, dc, d.e, d.t * d.e, val, ld, d.t * ld, dp + h * tt, d.t, d.h * tt,
             a.n, "cublasGemmStridedBatched (attention dP)");
        gemm(cs, pr, true, false, d.t, d.d, d.t, operand_at(pr, p, h * tt), d.t, d.h * tt, dc, d.e, d.t * d.e,
             dqkv + 2 * d.e + h * d.d, ld, d.t * ld, a.n, "cublasGemmStridedBatched (attention dV)");
    }
    SNN_LAUNCH(attention_softmax_backward_kernel, rows_grid(a, d), kThreads, cs.stream, v.p, dp, a.lengths, d.t,
               d.h, d.scale, d.causal);
    check_launch("attention_softmax_backward kernel");
    const void *ds = operand(cs, pr, dp, (size_t)probs, c.dp);
    for (int64_t h = 0; h < d.h; ++h) {
        const void *q = operand_at(pr, qkv, h * d.d), *k = operand_at(pr, q, d.e), *dsh = operand_at(pr, ds, h * tt);
        float *dq = dqkv + h * d.d, *dk = dq + d.e;
        gemm(cs, pr, false, false, d.t, d.d, d.t, dsh, d.t, d.h * tt, k, ld, d.t * ld, dq, ld, d.t * ld, a.n,
             "cublasGemmStridedBatched (attention dQ)");
        gemm(cs, pr, true, false, d.t, d.d, d.t, dsh, d.t, d.h * tt, q, ld, d.t * ld, dk, ld, d.t * ld, a.n,
             "cublasGemmStridedBatched (attention dK)");
    }
    const void *dqkv_op = operand(cs, pr, dqkv, (size_t)(rows * ld), c.dqkv);
    gemm1(cs, pr, true, false, ld, d.e, rows, dqkv_op, ld, operand(cs, pr, a.x[0], (size_t)(rows * d.e), c.x), d.e,
          dw_in, d.e, "cublasGemm (attention dW_in)");
    channel_sums(cs.stream, cs.sums, db_in, dqkv, rows, ld, 1);
    if (a.dx[0] != nullptr)
        gemm1(cs, pr, false, false, rows, d.e, ld, dqkv_op, ld, operand(cs, pr, v.w_in, (size_t)(ld * d.e), c.w_in),
              d.e, a.dx[0], d.e, "cublasGemm (attention dx)");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_attention{cu::attention_plan, nullptr, cu::attention_forward, cu::attention_backward,
                                         kAllPrecisions};

}  // namespace snn
