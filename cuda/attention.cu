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
// backward the same, about a pivot key (engine/math.h attention_dz). Row r
// of the n*H*T rows is query r % T of item r / T = (sample, head).
//
// cuBLAS is column-major; a row-major matrix is, read column-major, its
// transpose, so row-major C = op(A) op(B) is the column-major product
// C^T = op(B)^T op(A)^T: gemm below swaps the operands and sizes.
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
// query sees (engine/math.h attention_keys), 0 for the others.
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

// Row r of dP in place: ds = scale * dz (engine/math.h attention_dz), 0 at
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
// (floats).
void gemm(CudaStream &cs, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
          int64_t stride_a, const float *B, int64_t ldb, int64_t stride_b, float *C, int64_t ldc, int64_t stride_c,
          int64_t batch, const char *what) {
    const float one = 1.0f, zero = 0.0f;
    const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (batch == 1) {
        check(cublasSgemm_64(cs.blas, opb, opa, N, M, K, &one, B, ldb, A, lda, &zero, C, ldc), what);
        return;
    }
    check(cublasSgemmStridedBatched(cs.blas, opb, opa, (int)N, (int)M, (int)K, &one, B, (int)ldb, stride_b, A,
                                    (int)lda, stride_a, &zero, C, (int)ldc, stride_c, (int)batch),
          what);
}

void gemm1(CudaStream &cs, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
           const float *B, int64_t ldb, float *C, int64_t ldc, const char *what) {
    gemm(cs, ta, tb, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, what);
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

// Backward workspace: dC [n][T][E], dqkv [n][T][3E], dP [n][H][T][T].
void *attention_plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool backward, Precision,
                     size_t *workspace_bytes) {
    const Dims d = dims_of(l);
    if (max_batch * d.h > 0x7fffffff || 3 * d.e * d.t > 0x7fffffff)
        raise(SNN_ERR_UNSUPPORTED, "attention: batch x heads or steps x 3 features above 2^31 - 1 (cuBLAS int sizes)");
    *workspace_bytes = backward ? (size_t)(max_batch * d.t * (4 * d.e + d.h * d.t)) * sizeof(float) : 0;
    return nullptr;
}

// qkv = x W_in^T + b_in ; S_h = Q_h K_h^T ; P = masked softmax(scale S) ;
// C_h = P_h V_h ; y = C W_out^T + b_out
void attention_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const Dims d = dims_of(*a.l);
    if (a.n <= 0) return;
    const View v = view_of(a, d);
    const int64_t rows = a.n * d.t, ld = 3 * d.e, tt = d.t * d.t;
    gemm1(cs, false, true, rows, ld, d.e, a.x[0], d.e, v.w_in, d.e, v.qkv, ld, "cublasSgemm (attention in-projection)");
    bias_activation(cs.stream, v.qkv, nullptr, v.b_in, (size_t)(rows * ld), ld, 1, Act::identity);
    for (int64_t h = 0; h < d.h; ++h) {
        const float *q = v.qkv + h * d.d, *k = q + d.e;
        gemm(cs, false, true, d.t, d.t, d.d, q, ld, d.t * ld, k, ld, d.t * ld, v.p + h * tt, d.t, d.h * tt, a.n,
             "cublasSgemmStridedBatched (attention scores)");
    }
    SNN_LAUNCH(attention_softmax_forward_kernel, rows_grid(a, d), kThreads, cs.stream, v.p, a.lengths, d.t, d.h,
               d.scale, d.causal);
    check_launch("attention_softmax_forward kernel");
    for (int64_t h = 0; h < d.h; ++h) {
        const float *val = v.qkv + 2 * d.e + h * d.d;
        gemm(cs, false, false, d.t, d.d, d.t, v.p + h * tt, d.t, d.h * tt, val, ld, d.t * ld, v.ctx + h * d.d, d.e,
             d.t * d.e, a.n, "cublasSgemmStridedBatched (attention context)");
    }
    gemm1(cs, false, true, rows, d.e, d.e, v.ctx, d.e, v.w_out, d.e, a.y, d.e, "cublasSgemm (attention out-projection)");
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
    const View v = view_of(a, d);
    const int64_t rows = a.n * d.t, ld = 3 * d.e, tt = d.t * d.t;
    float *g = a.grads + a.l->weight_offset;
    float *dw_in = g, *db_in = g + 3 * d.e * d.e, *dw_out = db_in + 3 * d.e, *db_out = dw_out + d.e * d.e;
    float *dctx = static_cast<float *>(a.workspace), *dqkv = dctx + rows * d.e, *dp = dqkv + rows * ld;
    gemm1(cs, true, false, d.e, d.e, rows, a.dy, d.e, v.ctx, d.e, dw_out, d.e, "cublasSgemm (attention dW_out)");
    channel_sums(cs.stream, db_out, a.dy, rows, d.e, 1);
    gemm1(cs, false, false, rows, d.e, d.e, a.dy, d.e, v.w_out, d.e, dctx, d.e, "cublasSgemm (attention dC)");
    for (int64_t h = 0; h < d.h; ++h) {
        const float *val = v.qkv + 2 * d.e + h * d.d, *dc = dctx + h * d.d;
        gemm(cs, false, true, d.t, d.t, d.d, dc, d.e, d.t * d.e, val, ld, d.t * ld, dp + h * tt, d.t, d.h * tt, a.n,
             "cublasSgemmStridedBatched (attention dP)");
        gemm(cs, true, false, d.t, d.d, d.t, v.p + h * tt, d.t, d.h * tt, dc, d.e, d.t * d.e, dqkv + 2 * d.e + h * d.d,
             ld, d.t * ld, a.n, "cublasSgemmStridedBatched (attention dV)");
    }
    SNN_LAUNCH(attention_softmax_backward_kernel, rows_grid(a, d), kThreads, cs.stream, v.p, dp, a.lengths, d.t,
               d.h, d.scale, d.causal);
    check_launch("attention_softmax_backward kernel");
    for (int64_t h = 0; h < d.h; ++h) {
        const float *q = v.qkv + h * d.d, *k = q + d.e;
        float *dq = dqkv + h * d.d, *dk = dq + d.e;
        gemm(cs, false, false, d.t, d.d, d.t, dp + h * tt, d.t, d.h * tt, k, ld, d.t * ld, dq, ld, d.t * ld, a.n,
             "cublasSgemmStridedBatched (attention dQ)");
        gemm(cs, true, false, d.t, d.d, d.t, dp + h * tt, d.t, d.h * tt, q, ld, d.t * ld, dk, ld, d.t * ld, a.n,
             "cublasSgemmStridedBatched (attention dK)");
    }
    gemm1(cs, true, false, ld, d.e, rows, dqkv, ld, a.x[0], d.e, dw_in, d.e, "cublasSgemm (attention dW_in)");
    channel_sums(cs.stream, db_in, dqkv, rows, ld, 1);
    if (a.dx[0] != nullptr)
        gemm1(cs, false, false, rows, d.e, ld, dqkv, ld, v.w_in, d.e, a.dx[0], d.e, "cublasSgemm (attention dx)");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_attention{cu::attention_plan, nullptr, cu::attention_forward, cu::attention_backward};

}  // namespace snn
