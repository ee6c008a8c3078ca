// Convolution on the CPU: the table of its paths (kConvPaths, at the end;
// cpu/conv_paths.h), and the float32 paths' plans and passes. The direct
// paths hand each image (or part of one) to cpu/conv_avx512.h's,
// cpu/conv_avx2.h's or cpu/conv_direct.h's kernels; the lowerings take
// im2col and sgemm: a chunk of images is lowered at once into col[K][nb*P]
// (K = cin*kh*kw, P = hout*wout), so one sgemm covers the chunk:
// Z[cout][nb*P] = W[cout][K] col. A fused pass then adds the bias, applies the activation and scatters
// Z into NCHW order. The bf16 paths are cpu/conv_bf16.cpp's.
#include <algorithm>
#include <cstdio>
#include <new>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "cpu/activation.h"
#include "cpu/conv_avx2.h"
#include "cpu/conv_avx512.h"
#include "cpu/conv_bf16.h"
#include "cpu/conv_direct.h"
#include "cpu/conv_paths.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm512.h"
#include "cpu/kernel_choice.h"
#include "cpu/product_paths.h"
#include "cpu/thread_pool.h"
#include "ops/dims.h"
#include "ops/op.h"
#include "snn.h"

namespace snn {
namespace {

// Lowered columns of one chunk kept under this many floats (the im2col
// buffer stays within a few MiB of cache-friendly memory).
constexpr int64_t kColBudget = int64_t(1) << 20;

// The padded inputs and output gradients of a backward chunk on the AVX-512
// and AVX2 direct paths kept under this many floats (within the second-level
// cache).
constexpr int64_t kPaddedBudget = int64_t(1) << 17;

// The output columns ox whose input column ox*sw - pw + j lies inside
// [0, win): ox in [*lo, *hi).
inline void valid_columns(const ConvDims &d, int64_t j, int64_t *lo, int64_t *hi) {
    const int64_t off = j - d.pw;  // input column = ox*sw + off
    int64_t first = off >= 0 ? 0 : (-off + d.sw - 1) / d.sw;
    int64_t last = d.win - off <= 0 ? 0 : (d.win - off + d.sw - 1) / d.sw;  // first invalid
    *lo = std::min(first, d.wout);
    *hi = std::max(*lo, std::min(last, d.wout));
}

// Stride 1 with as many output as input columns (3x3 with padding 1, 5x5
// with 2, ...): a lowered row of one image is the input map shifted by
// (i - ph) rows and (j - pw) columns, so it is one contiguous copy, after
// which the columns that wrapped around a row's edge are set to zero.
inline bool same_width(const ConvDims &d) { return d.sh == 1 && d.sw == 1 && d.wout == d.win; }

inline int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

// For tap (i, j): the shift of the input index, the valid output rows
// [oy_lo, oy_hi), and the range [q_lo, q_hi) of output indices inside those
// rows whose input index q + shift lies inside the map. Both ranges may be
// empty: a tap can miss every row (a kernel taller than the image and its
// padding above it), and a column shift can exceed a row's width (padding
// wider than the image), so -shift may lie past the valid rows' end.
struct Shift {
    int64_t shift, cols, oy_lo, oy_hi, q_lo, q_hi;
};
inline Shift tap_shift(const ConvDims &d, int64_t i, int64_t j) {
    Shift t;
    const int64_t rows = i - d.ph;
    t.cols = j - d.pw;
    t.shift = rows * d.win + t.cols;
    t.oy_lo = clamp(-rows, 0, d.hout);
    t.oy_hi = clamp(d.hin - rows, t.oy_lo, d.hout);
    t.q_lo = clamp(-t.shift, t.oy_lo * d.wout, t.oy_hi * d.wout);
    t.q_hi = clamp(d.hin * d.win - t.shift, t.q_lo, t.oy_hi * d.wout);
    return t;
}

// Zeroes, in each valid row of one image's lowered row, the columns whose
// input column lies outside the map.
inline void zero_wrapped(const ConvDims &d, const Shift &t, float *out) {
    for (int64_t oy = t.oy_lo; oy < t.oy_hi; ++oy) {
        float *o = out + oy * d.wout;
        if (t.cols < 0)
            for (int64_t ox = 0; ox < std::min(-t.cols, d.wout); ++ox) o[ox] = 0.0f;
        else
            for (int64_t ox = std::max<int64_t>(0, d.wout - t.cols); ox < d.wout; ++ox) o[ox] = 0.0f;
    }
}

// fn(t, map, out) for every tap and image: map the image's channel c
// (offset into base), out its lowered row (P floats of col).
template <typename Map, typename Fn>
inline void for_each_lowered_row(const ConvDims &d, int64_t nb, Map *base, float *col, Fn fn) {
    const int64_t P = d.hout * d.wout, ld = nb * P, in_map = d.hin * d.win;
    for (int64_t c = 0; c < d.cin; ++c)
        for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j) {
                const Shift t = tap_shift(d, i, j);
                float *row = col + ((c * d.kh + i) * d.kw + j) * ld;
                for (int64_t img = 0; img < nb; ++img) fn(t, base + (img * d.cin + c) * in_map, row + img * P);
            }
}

void im2col_same_width(const ConvDims &d, int64_t nb, const float *x, float *col) {
    const int64_t P = d.hout * d.wout;
    for_each_lowered_row(d, nb, x, col, [&](const Shift &t, const float *map, float *out) {
        std::fill(out, out + t.q_lo, 0.0f);
        std::copy(map + t.q_lo + t.shift, map + t.q_hi + t.shift, out + t.q_lo);
        std::fill(out + t.q_hi, out + P, 0.0f);
        zero_wrapped(d, t, out);
    });
}

// col2im for the same geometry: the wrapped columns of col (scratch) are
// zeroed, then each image's lowered row is added to the map in one pass.
void col2im_same_width(const ConvDims &d, int64_t nb, float *col, float *dx) {
    for_each_lowered_row(d, nb, dx, col, [&](const Shift &t, float *map, float *in) {
        zero_wrapped(d, t, in);
        for (int64_t q = t.q_lo; q < t.q_hi; ++q) map[q + t.shift] += in[q];
    });
}

// col[(c*kh + i)*kw + j][img*P + oy*wout + ox] = x[img][c][oy*sh - ph + i][ox*sw - pw + j]
// (zero outside the image). Each output row is a zero prefix, a strided (or
// contiguous) copy, and a zero suffix.
void im2col(const ConvDims &d, bool shifted, int64_t nb, const float *x, float *col) {
    if (shifted) {
        im2col_same_width(d, nb, x, col);
        return;
    }
    const int64_t P = d.hout * d.wout, ld = nb * P, in_map = d.hin * d.win;
    for (int64_t c = 0; c < d.cin; ++c)
        for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j) {
                float *row = col + ((c * d.kh + i) * d.kw + j) * ld;
                int64_t lo, hi;
                valid_columns(d, j, &lo, &hi);
                const int64_t off = j - d.pw;
                for (int64_t img = 0; img < nb; ++img) {
                    const float *map = x + (img * d.cin + c) * in_map;
                    float *out = row + img * P;
                    for (int64_t oy = 0; oy < d.hout; ++oy) {
                        const int64_t iy = oy * d.sh - d.ph + i;
                        float *o = out + oy * d.wout;
                        if (iy < 0 || iy >= d.hin) {
                            for (int64_t ox = 0; ox < d.wout; ++ox) o[ox] = 0.0f;
                            continue;
                        }
                        const float *src = map + iy * d.win + off;
                        for (int64_t ox = 0; ox < lo; ++ox) o[ox] = 0.0f;
                        if (d.sw == 1) {
                            for (int64_t ox = lo; ox < hi; ++ox) o[ox] = src[ox];
                        } else {
                            for (int64_t ox = lo; ox < hi; ++ox) o[ox] = src[ox * d.sw];
                        }
                        for (int64_t ox = hi; ox < d.wout; ++ox) o[ox] = 0.0f;
                    }
                }
            }
}

// The adjoint of im2col: dx[img][c][iy][ix] += col[...] for every place the
// input element was copied to. dx must be zeroed first.
void col2im(const ConvDims &d, bool shifted, int64_t nb, float *col, float *dx) {
    if (shifted) {
        col2im_same_width(d, nb, col, dx);
        return;
    }
    const int64_t P = d.hout * d.wout, ld = nb * P, in_map = d.hin * d.win;
    for (int64_t c = 0; c < d.cin; ++c)
        for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j) {
                const float *row = col + ((c * d.kh + i) * d.kw + j) * ld;
                int64_t lo, hi;
                valid_columns(d, j, &lo, &hi);
                const int64_t off = j - d.pw;
                for (int64_t img = 0; img < nb; ++img) {
                    float *map = dx + (img * d.cin + c) * in_map;
                    const float *in = row + img * P;
                    for (int64_t oy = 0; oy < d.hout; ++oy) {
                        const int64_t iy = oy * d.sh - d.ph + i;
                        if (iy < 0 || iy >= d.hin) continue;
                        float *dst = map + iy * d.win + off;
                        const float *o = in + oy * d.wout;
                        if (d.sw == 1) {
                            for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += o[ox];
                        } else {
                            for (int64_t ox = lo; ox < hi; ++ox) dst[ox * d.sw] += o[ox];
                        }
                    }
                }
            }
}

// The plan of the float32 paths.
struct ConvPlan : ConvPlanned {
    int64_t chunk;       // images lowered per sgemm, or per AVX-512 or AVX2 backward step (1 for direct)
    int32_t workers;     // workspace slots planned
    size_t slot;         // floats per worker: col[K][chunk*P], z[cout][chunk*P], the packing
    size_t params;       // floats of dW + db accumulated per extra worker
    size_t pack_floats;  // gemm512's packing space at the end of each slot, or 0: products by size
    std::vector<float> lanes{};  // avx512_direct, avx2_direct: the forward pass's table of lanes
};

// The lowering copies shifted maps (im2col_same_width, col2im_same_width).
bool shifted(const ConvPlan &p) { return p.path == ConvPath::im2col_shifted; }

struct ConvJob {
    const ConvPlan *plan;
    int64_t chunk;  // images per sgemm in this call: at most plan->chunk
    const ConvDims *d;
    int64_t n;
    const float *x, *w, *b, *y;
    float *out, *dy, *dw, *db, *dx;
    float *workspace;
    float *pre;  // z kept for gelu and silu, or null
};

// C (+)= op(A) op(B) by the products' table, gemm512 with the worker's
// packing space when the plan has it.
void conv_gemm(float *pack, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
               const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    run_product(Product{Precision::f32, ta, tb, M, N, K, A, lda, B, ldb, C, ldc, accumulate, /*work=*/nullptr,
                        /*scratch=*/nullptr, pack});
}

// The worker's packing space for gemm512, after its z, or null.
float *pack_of(const ConvPlan &p, const ConvDims &d, float *z) {
    return p.pack_floats ? z + d.cout * p.chunk * d.hout * d.wout : nullptr;
}

// Chunks are dealt round-robin (worker w takes chunks w, w + workers, ...),
// so each worker's partial sums are the same for a fixed thread count.
// The direct path: worker w takes a contiguous range of images.
void direct_forward_worker(void *ctx, int32_t worker, int32_t workers) {
    const ConvJob &j = *static_cast<const ConvJob *>(ctx);
    const ConvDims &d = *j.d;
    const int64_t in_size = d.cin * d.hin * d.win, out_size = d.cout * d.hout * d.wout;
    int64_t i0, i1;
    split_range(j.n, workers, worker, &i0, &i1);
    for (int64_t i = i0; i < i1; ++i)
        conv_direct_forward_image(d, j.x + i * in_size, j.w, j.b, j.out + i * out_size,
                                  j.pre ? j.pre + i * out_size : nullptr,
                                  j.workspace + size_t(worker) * j.plan->slot);
}

// The AVX-512 and AVX2 paths: the n images times `parts` ranges of output
// channels are split into contiguous ranges of (image, part), one per
// worker; a batch smaller than the workers splits each image's channels.
void padded_forward_worker(void *ctx, int32_t worker, int32_t workers) {
    const ConvJob &j = *static_cast<const ConvJob *>(ctx);
    const ConvDims &d = *j.d;
    const bool avx2 = j.plan->path == ConvPath::avx2_direct;
    const int64_t in_size = d.cin * d.hin * d.win, out_size = d.cout * d.hout * d.wout;
    const int64_t block = avx2 ? kConvAvx2Rows : kConv512Rows;
    const int64_t blocks = (d.cout + block - 1) / block;
    const int64_t parts = j.n >= workers ? 1 : std::min<int64_t>(blocks, (workers + j.n - 1) / j.n);
    int64_t i0, i1, last = -1;
    split_range(j.n * parts, workers, worker, &i0, &i1);
    float *workspace = j.workspace + size_t(worker) * j.plan->slot;
    if (i0 < i1) (avx2 ? conv_avx2_forward_begin : conv512_forward_begin)(d, workspace);
    for (int64_t item = i0; item < i1; ++item) {
        const int64_t img = item / parts;
        int64_t b0, b1;
        split_range(blocks, int32_t(parts), int32_t(item % parts), &b0, &b1);
        (avx2 ? conv_avx2_forward_image : conv512_forward_image)(
            d, j.x + img * in_size, j.w, j.b, j.out + img * out_size, j.pre ? j.pre + img * out_size : nullptr,
            b0 * block, std::min(d.cout, b1 * block), /*padded=*/img == last, j.plan->lanes.data(), workspace);
        last = img;
    }
}

void conv_forward_worker(void *ctx, int32_t worker, int32_t workers) {
    const ConvJob &j = *static_cast<const ConvJob *>(ctx);
    const ConvDims &d = *j.d;
    const int64_t K = d.cin * d.kh * d.kw, P = d.hout * d.wout, chunk = j.chunk;
    float *col = j.workspace + size_t(worker) * j.plan->slot;
    float *z = col + K * j.plan->chunk * P;
    float *pack = pack_of(*j.plan, d, z);
    for (int64_t i0 = worker * chunk; i0 < j.n; i0 += workers * chunk) {
        const int64_t nb = std::min(chunk, j.n - i0), ld = nb * P;
        im2col(d, shifted(*j.plan), nb, j.x + i0 * d.cin * d.hin * d.win, col);
        conv_gemm(pack, /*ta=*/false, /*tb=*/false, d.cout, ld, K, j.w, K, col, ld, z, ld, /*accumulate=*/false);
        // out[img][co][p] = act(z[co][img*P + p] + b[co])
        for (int64_t img = 0; img < nb; ++img)
            for (int64_t co = 0; co < d.cout; ++co) {
                const float *src = z + co * ld + img * P;
                float *dst = j.out + ((i0 + img) * d.cout + co) * P;
                if (j.pre) {
                    float *pre = j.pre + ((i0 + img) * d.cout + co) * P;
                    activate_span(Act::identity, src, d.bias ? j.b[co] : 0.0f, pre, P);
                    activate_span(d.act, pre, 0.0f, dst, P);
                } else {
                    activate_span(d.act, src, d.bias ? j.b[co] : 0.0f, dst, P);
                }
            }
    }
}

// Where a backward worker sums its gradients, zeroed: worker 0 into dw and
// db, the others into their own slots after the workers' slots.
void worker_gradients(const ConvJob &j, int32_t worker, float **dw, float **db) {
    const ConvDims &d = *j.d;
    const int64_t K = d.cin * d.kh * d.kw;
    *dw = j.dw;
    *db = j.db;
    if (worker > 0) {
        *dw = j.workspace + size_t(j.plan->workers) * j.plan->slot + size_t(worker - 1) * j.plan->params;
        *db = *dw + d.cout * K;
    }
    for (int64_t i = 0; i < d.cout * K; ++i) (*dw)[i] = 0.0f;
    if (d.bias)
        for (int64_t co = 0; co < d.cout; ++co) (*db)[co] = 0.0f;
}

// The direct path: worker w takes a contiguous range of images.
void direct_backward_worker(void *ctx, int32_t worker, int32_t workers) {
    const ConvJob &j = *static_cast<const ConvJob *>(ctx);
    const ConvDims &d = *j.d;
    const int64_t in_size = d.cin * d.hin * d.win, out_size = d.cout * d.hout * d.wout;
    float *dw, *db;
    worker_gradients(j, worker, &dw, &db);
    int64_t i0, i1;
    split_range(j.n, workers, worker, &i0, &i1);
    for (int64_t i = i0; i < i1; ++i)
        conv_direct_backward_image(d, j.x + i * in_size, j.w, j.y + i * out_size,
                                   j.pre ? j.pre + i * out_size : nullptr, j.dy + i * out_size, dw, db,
                                   j.dx ? j.dx + i * in_size : nullptr, j.workspace + size_t(worker) * j.plan->slot);
}

void padded_backward_worker(void *ctx, int32_t worker, int32_t workers) {
    const ConvJob &j = *static_cast<const ConvJob *>(ctx);
    const ConvDims &d = *j.d;
    const int64_t P = d.hout * d.wout, in_size = d.cin * d.hin * d.win, chunk = j.chunk;
    float *dw, *db;
    worker_gradients(j, worker, &dw, &db);
    for (int64_t i0 = worker * chunk; i0 < j.n; i0 += workers * chunk) {
        const int64_t nb = std::min(chunk, j.n - i0), at = i0 * d.cout * P;
        (j.plan->path == ConvPath::avx2_direct ? conv_avx2_backward_images : conv512_backward_images)(
            d, nb, j.x + i0 * in_size, j.w, j.y + at, j.pre ? j.pre + at : nullptr, j.dy + at, dw, db,
            j.dx ? j.dx + i0 * in_size : nullptr, j.workspace + size_t(worker) * j.plan->slot);
    }
}

// Per chunk: Z = dy * act'(y) gathered to [cout][nb*P]; db += row sums of Z;
// dW += Z col^T; dcol = W^T Z (written over col); dx = col2im(dcol).
void conv_backward_worker(void *ctx, int32_t worker, int32_t workers) {
    const ConvJob &j = *static_cast<const ConvJob *>(ctx);
    const ConvDims &d = *j.d;
    const int64_t K = d.cin * d.kh * d.kw, P = d.hout * d.wout, in_size = d.cin * d.hin * d.win;
    const int64_t chunk = j.chunk;
    float *col = j.workspace + size_t(worker) * j.plan->slot;
    float *z = col + K * j.plan->chunk * P;
    float *pack = pack_of(*j.plan, d, z);
    float *dw, *db;
    worker_gradients(j, worker, &dw, &db);
    for (int64_t i0 = worker * chunk; i0 < j.n; i0 += workers * chunk) {
        const int64_t nb = std::min(chunk, j.n - i0), ld = nb * P;
        for (int64_t img = 0; img < nb; ++img)
            for (int64_t co = 0; co < d.cout; ++co) {
                const int64_t off = ((i0 + img) * d.cout + co) * P;
                const float *g = j.dy + off;
                const float *out = (j.pre ? j.pre : j.y) + off;  // act' from z or y
                float *dst = z + co * ld + img * P;
                derivative_span(d.act, g, out, dst, P);
            }
        if (d.bias)
            for (int64_t co = 0; co < d.cout; ++co) db[co] += sum_span(z + co * ld, ld);
        im2col(d, shifted(*j.plan), nb, j.x + i0 * in_size, col);
        conv_gemm(pack, /*ta=*/false, /*tb=*/true, d.cout, K, ld, z, ld, col, ld, dw, K, /*accumulate=*/true);
        if (j.dx) {
            conv_gemm(pack, /*ta=*/true, /*tb=*/false, K, ld, d.cout, j.w, K, z, ld, col, ld, /*accumulate=*/false);
            float *dxc = j.dx + i0 * in_size;
            for (int64_t i = 0; i < nb * in_size; ++i) dxc[i] = 0.0f;
            col2im(d, shifted(*j.plan), nb, col, dxc);
        }
    }
}

// ---- the float32 plans ----

// A new plan for path with the fields every float32 path sets; the workspace
// it needs: the workers' slots and, for backward, the extra workers'
// gradients.
ConvPlanned *new_plan(ConvPath path, const ConvDims &d, int64_t chunk, int32_t workers, size_t slot, bool backward,
                      size_t *workspace_bytes) {
    ConvPlan *plan = new (std::nothrow) ConvPlan{};
    if (!plan) fail(SNN_ERR_OUT_OF_MEMORY, "out of host memory");
    plan->path = path;
    plan->products = nullptr;
    plan->chunk = chunk;
    plan->workers = workers;
    plan->slot = slot;
    plan->params = size_t(d.cout * d.cin * d.kh * d.kw + d.cout);
    plan->pack_floats = 0;
    size_t floats = size_t(plan->workers) * plan->slot;
    if (backward) floats += size_t(plan->workers - 1) * plan->params;
    *workspace_bytes = floats * sizeof(float);
    return plan;
}

// Workers for a batch of max_batch: the threads, at most one per image.
int32_t batch_workers(int64_t max_batch) { return std::max<int32_t>(1, std::min<int64_t>(cpu_threads(), max_batch)); }

// The AVX-512 and AVX2 direct paths (avx512_direct, avx2_direct): the same
// plan with each one's kernels.
ConvPlanned *plan_padded_direct(const Layer &l, const ConvProcessor &, ConvPath path, int64_t max_batch,
                                bool backward, size_t *workspace_bytes) {
    const ConvDims d = conv_dims(l);
    const bool avx2 = path == ConvPath::avx2_direct;
    const int32_t workers = batch_workers(max_batch);
    const int64_t chunk =
        std::min((avx2 ? conv_avx2_backward_chunk : conv512_backward_chunk)(d, kPaddedBudget),
                 (max_batch + workers - 1) / workers);
    const size_t slot = backward ? (avx2 ? conv_avx2_backward_floats : conv512_backward_floats)(d, chunk)
                                 : (avx2 ? conv_avx2_forward_floats : conv512_forward_floats)(d);
    // Forward: every thread, to split the channels of a small batch.
    ConvPlanned *planned = new_plan(path, d, /*chunk=*/backward ? chunk : 1,
                                    /*workers=*/backward ? workers : std::max<int32_t>(1, cpu_threads()), slot,
                                    backward, workspace_bytes);
    ConvPlan *plan = static_cast<ConvPlan *>(planned);
    try {  // a backward plan runs the forward pass too
        plan->lanes.resize((avx2 ? conv_avx2_forward_lanes_floats : conv512_forward_lanes_floats)(d));
    } catch (const std::bad_alloc &) {
        delete plan;
        fail(SNN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    (avx2 ? conv_avx2_forward_lanes : conv512_forward_lanes)(d, plan->lanes.data());
    return plan;
}

ConvPlanned *plan_direct(const Layer &l, const ConvProcessor &, ConvPath path, int64_t max_batch, bool backward,
                         size_t *workspace_bytes) {
    const ConvDims d = conv_dims(l);
    return new_plan(path, d, /*chunk=*/1, batch_workers(max_batch),
                    /*slot=*/backward ? conv_direct_backward_floats(d) : conv_direct_forward_floats(d), backward,
                    workspace_bytes);
}

// Enough chunks for every worker, each within the lowering budget.
ConvPlanned *plan_im2col(const Layer &l, const ConvProcessor &cpu, ConvPath path, int64_t max_batch, bool backward,
                         size_t *workspace_bytes) {
    const ConvDims d = conv_dims(l);
    const int64_t K = d.cin * d.kh * d.kw, P = d.hout * d.wout;
    const int32_t workers = batch_workers(max_batch);
    int64_t chunk = std::max<int64_t>(1, kColBudget / std::max<int64_t>(1, K * P));
    chunk = std::min(chunk, (max_batch + workers - 1) / workers);
    const size_t pack = cpu.gemm512_products ? gemm512_pack_floats() : 0;
    ConvPlanned *planned = new_plan(path, d, chunk, workers, /*slot=*/size_t((K + d.cout) * chunk * P) + pack,
                                    backward, workspace_bytes);
    ConvPlan *plan = static_cast<ConvPlan *>(planned);
    plan->pack_floats = pack;
    plan->products = pack ? product_path_name(ProductPath::gemm512_packed) : "by size";
    return plan;
}

void release_f32(ConvPlanned *plan) noexcept { delete static_cast<ConvPlan *>(plan); }

// ---- the float32 passes ----

int32_t conv_workers(const ConvPlan &plan, int64_t n) {
    const int64_t chunks = (n + plan.chunk - 1) / plan.chunk;
    return int32_t(std::max<int64_t>(1, std::min<int64_t>({int64_t(cpu_threads()), int64_t(plan.workers), chunks})));
}

// The chunk size that deals the n images evenly: as few rounds of one chunk
// per worker as the planned chunk allows, the images split equally over
// them (64 images, 2 workers, chunks of at most 18: 4 chunks of 16, not
// 18, 18, 18 and 10, which would leave one worker 36 images and the other 28).
int64_t balanced_chunk(const ConvPlan &plan, int64_t n, int32_t workers) {
    if (plan.path == ConvPath::direct) return 1;
    const int64_t per_round = int64_t(workers) * plan.chunk;
    const int64_t rounds = (n + per_round - 1) / per_round;
    const int64_t slots = int64_t(workers) * rounds;
    return std::max<int64_t>(1, (n + slots - 1) / slots);
}

void run_forward(const OpArgs &a, const ConvPlan &p, int32_t workers, WorkerFn worker) {
    const ConvDims d = conv_dims(*a.l);
    ConvJob job{&p,
                balanced_chunk(p, a.n, workers),
                &d,
                a.n,
                a.x[0],
                a.params + a.l->weight_offset,
                a.params + a.l->bias_offset,
                /*y=*/nullptr,
                /*out=*/a.y,
                /*dy=*/nullptr,
                /*dw=*/nullptr,
                /*db=*/nullptr,
                /*dx=*/nullptr,
                static_cast<float *>(a.workspace),
                act_uses_input(d.act) ? a.aux : nullptr};
    parallel_run(workers, worker, &job);
}

void forward_padded_direct(const OpArgs &a, const ConvPlanned &plan) {
    const ConvPlan &p = static_cast<const ConvPlan &>(plan);
    run_forward(a, p, std::min(cpu_threads(), p.workers), padded_forward_worker);
}

void forward_direct(const OpArgs &a, const ConvPlanned &plan) {
    const ConvPlan &p = static_cast<const ConvPlan &>(plan);
    run_forward(a, p, conv_workers(p, a.n), direct_forward_worker);
}

void forward_im2col(const OpArgs &a, const ConvPlanned &plan) {
    const ConvPlan &p = static_cast<const ConvPlan &>(plan);
    run_forward(a, p, conv_workers(p, a.n), conv_forward_worker);
}

void run_backward(const OpArgs &a, const ConvPlan &p, WorkerFn worker) {
    const ConvDims d = conv_dims(*a.l);
    float *dw = a.grads + a.l->weight_offset, *db = a.grads + a.l->bias_offset;
    const int32_t workers = conv_workers(p, a.n);
    ConvJob job{&p,
                balanced_chunk(p, a.n, workers),
                &d,
                a.n,
                a.x[0],
                a.params + a.l->weight_offset,
                /*b=*/nullptr,
                a.y,
                /*out=*/nullptr,
                a.dy,
                dw,
                db,
                a.dx[0],
                static_cast<float *>(a.workspace),
                act_uses_input(d.act) ? a.aux : nullptr};
    parallel_run(workers, worker, &job);
    // Sum the other workers' partial gradients into worker 0's, in order.
    const size_t params = size_t(d.cout * d.cin * d.kh * d.kw);
    for (int32_t k = 1; k < workers; ++k) {
        const float *part = job.workspace + size_t(p.workers) * p.slot + size_t(k - 1) * p.params;
        for (size_t i = 0; i < params; ++i) dw[i] += part[i];
        if (d.bias)
            for (int64_t co = 0; co < d.cout; ++co) db[co] += part[params + size_t(co)];
    }
}

void backward_padded_direct(const OpArgs &a, const ConvPlanned &plan) {
    run_backward(a, static_cast<const ConvPlan &>(plan), padded_backward_worker);
}

void backward_direct(const OpArgs &a, const ConvPlanned &plan) {
    run_backward(a, static_cast<const ConvPlan &>(plan), direct_backward_worker);
}

void backward_im2col(const OpArgs &a, const ConvPlanned &plan) {
    run_backward(a, static_cast<const ConvPlan &>(plan), conv_backward_worker);
}

// ---- the table ----

// bf16 precision is a request for speed: a layer whose bf16 rows measured
// slower than the float32 row it would take at float32 takes that float32
// row at bf16 too, and computes exact float32 (both passes). The rule
// depends on the layer's shape alone, not on the batch, the pass or the
// processor, so that which layers round to bf16 is the same everywhere
// (natively, emulated under an SNN_CPU_ISA cap, with the reference kernels).
// Measured on one core of a Zen 5 (AVX-512 BF16), the machine shared
// with other jobs, with bench/precision_layers against the bf16 rows alone
// (bench/results.md, "Issue 39: bf16 takes float32 where float32 is
// faster"): float32 time over bf16 time, above 1 where bf16 is faster,
// lowest to highest of 3 runs each of the forward pass and the training
// step (forward and backprop) at batches 1 and 64 (one run far off the
// others left out for five shapes: 28x28x16 to 16's 0.19, 12x12x16 to 32's
// 4.42, 14x14x32 to 32's 7.47, the stride-2 14x14x16's 7.55 and 5.32);
// "macs" is the multiply-adds of one image, cout*cin*kh*kw*P for P output
// pixels, "weights" cout*cin*kh*kw. With the rules off (cpu_bf16_rules),
// every layer at bf16 takes the bf16 rows, the bf16 direct one included.
//
// - Few taps (cin*kh*kw <= 32, stride 1: first layers): always float32. The
//   bf16 row runs cpu/conv_direct.h's float32 kernels on rounded copies of
//   the operands, so its forward pass costs more than those kernels and
//   than the AVX-512 direct ones: 28x28x1 5x5 to 16 0.12-0.80, 3x3 pad 1 to
//   16 0.13-0.76, to 32 0.57-0.77. One exception: 3x3 pad 1 to 32's
//   training step at batch 64 took 1.14-1.35 (its backward pass is faster
//   on the bf16 row); the default CNN's whole step still gains.
// - Stride 1 with "same" padding (the bf16 shifted lowering, against the
//   AVX-512 direct kernels): bf16 from kBf16ShiftedMinMacs up. float32
//   below: 14x14x8 3x3 to 8 (113k macs) 0.63-0.81, 7x7x16 to 16 (113k)
//   0.66-1.04, 7x7x16 to 32 (226k) 0.77-1.18; bf16 at 12x12x16 to 32 (663k)
//   0.92-1.20, 14x14x16 to 32 (903k) 0.97-1.92, 7x7x32 to 64 (903k)
//   0.86-2.39, 28x28x16 to 16 (1.8M) 0.81-1.23 (with the input gradient, as
//   inside a model, 0.99-1.13; the resnet step at bf16 measured 5% slower
//   with this shape on float32), 14x14x64 to 16 (1.8M) 0.96-1.33, 14x14x32
//   to 32 (1.8M) 1.02-1.40, 14x14x32 to 64 (3.6M) 1.14-2.31.
// - Other stride-1 layers with padding narrower than the kernel (the bf16
//   im2col lowering, against the AVX-512 direct kernels): bf16 from
//   kBf16LoweredMinMacs up. float32 below: 12x12x16 3x3 to 8 (115k)
//   0.26-0.48, 12x12x32 3x3 to 16 (461k) 0.41-0.94, 14x14x16 5x5 to 16
//   (640k) 0.40-0.95, 14x14x32 3x3 to 32 (1.3M) 0.68-1.21, 12x12x64 3x3 to
//   32 (1.8M) 0.42-1.14, 10x10x64 3x3 to 64 (2.4M) 0.61-1.78, 26x26x16 3x3
//   to 32 (2.7M) 0.63-1.06, 26x26x32 3x3 to 16 (2.7M) 0.43-0.89; bf16 at
//   26x26x32 3x3 to 32 (5.3M) 0.92-1.15, to 64 (10.6M) 1.26-1.51, 14x14x64
//   3x3 to 128 (10.6M) 1.36-1.92.
// - The rest, strided layers (the bf16 im2col lowering, against float32's):
//   bf16 from kBf16MinWeights weights up. float32 below: 28x28x8 3x3 stride
//   2 pad 1 to 16 (1152 weights) 0.81-1.39, 14x14x16 to 16 (2304) 0.95-1.17;
//   bf16 at 14x14x16 to 32 (4608) 0.97-1.40, 28x28x16 to 32 (4608)
//   1.02-1.75, 28x28x32 to 64 (18432) 1.06-1.82.
constexpr int64_t kBf16MinWeights = 4608;
constexpr int64_t kBf16ShiftedMinMacs = 512 * 1024;
constexpr int64_t kBf16LoweredMinMacs = 4 * 1024 * 1024;

}  // namespace

bool conv_bf16_takes_f32(const ConvDims &d) {
    if (conv_direct_eligible(d)) return true;
    const int64_t weights = d.cout * d.cin * d.kh * d.kw, macs = weights * d.hout * d.wout;
    if (conv_bf16_shifted_eligible(d)) return macs < kBf16ShiftedMinMacs;
    if (conv512_eligible(d)) return macs < kBf16LoweredMinMacs;
    return weights < kBf16MinWeights;
}

namespace {

// At bf16, the float32 rows take the layer.
bool rule_takes_f32(const ConvDims &d, const ConvProcessor &cpu) { return cpu.bf16_rule && conv_bf16_takes_f32(d); }

// The bf16 rows: at bf16 precision, for the layers the rule leaves to bf16.
bool bf16_row(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return precision == Precision::bf16 && !rule_takes_f32(d, cpu);
}

bool native_bf16(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return bf16_row(d, cpu, precision) && cpu.bf16_native;
}

// The direct kernels' derivative keeps dZ = dy act'(y) rounded only for
// these activations.
bool bf16_direct_eligible(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return native_bf16(d, cpu, precision) && conv_direct_eligible(d) && (d.act == Act::identity || d.act == Act::relu);
}

bool bf16_shifted_eligible(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return native_bf16(d, cpu, precision) && conv_bf16_shifted_eligible(d);
}

bool bf16_im2col_eligible(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return bf16_row(d, cpu, precision);
}

// The float32 rows: at float32, and at bf16 for the layers the rule gives them.
bool f32_row(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return precision == Precision::f32 || (precision == Precision::bf16 && rule_takes_f32(d, cpu));
}

bool fast_f32(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return f32_row(d, cpu, precision) && !cpu.reference;
}

bool avx512_direct_eligible(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return fast_f32(d, cpu, precision) && cpu.avx512 && cpu.conv512 && conv512_eligible(d);
}

// Every shape the AVX-512 kernels take, the few-taps ones included: on the
// first layer of an image network (conv 3x3 32 over 28x28x1) the forward
// pass is 4% slower than the few-taps kernels' and a training step 11%
// faster; on larger layers level with OpenBLAS's Haswell kernels at one
// thread and faster than snn's own products (bench/results.md, issue 39:
// AVX2 direct convolutions).
bool avx2_direct_eligible(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return fast_f32(d, cpu, precision) && cpu.avx2 && conv512_eligible(d);
}

bool direct_eligible(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return fast_f32(d, cpu, precision) && conv_direct_eligible(d);
}

bool im2col_shifted_eligible(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return fast_f32(d, cpu, precision) && same_width(d);
}

bool im2col_eligible(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    return f32_row(d, cpu, precision);
}

// Scanned in order when a plan is made; the first eligible row plans and
// runs the layer.
constexpr ConvPathRow kConvPaths[] = {
    {ConvPath::bf16_direct, "bf16 direct (few taps)", bf16_direct_eligible, conv_bf16_plan, conv_bf16_release,
     conv_bf16_forward, conv_bf16_backward},
    {ConvPath::bf16_shifted, "bf16 shifted lowering", bf16_shifted_eligible, conv_bf16_plan, conv_bf16_release,
     conv_bf16_forward, conv_bf16_backward},
    {ConvPath::bf16_im2col, "bf16 im2col", bf16_im2col_eligible, conv_bf16_plan, conv_bf16_release,
     conv_bf16_forward, conv_bf16_backward},
    {ConvPath::avx512_direct, "AVX-512 direct", avx512_direct_eligible, plan_padded_direct, release_f32,
     forward_padded_direct, backward_padded_direct},
    {ConvPath::avx2_direct, "AVX2 direct", avx2_direct_eligible, plan_padded_direct, release_f32,
     forward_padded_direct, backward_padded_direct},
    {ConvPath::direct, "direct (few taps)", direct_eligible, plan_direct, release_f32, forward_direct,
     backward_direct},
    {ConvPath::im2col_shifted, "im2col (shifted copies)", im2col_shifted_eligible, plan_im2col, release_f32,
     forward_im2col, backward_im2col},
    {ConvPath::im2col, "im2col", im2col_eligible, plan_im2col, release_f32, forward_im2col, backward_im2col},
};

constexpr bool rows_in_enum_order() {
    for (size_t i = 0; i < sizeof(kConvPaths) / sizeof(kConvPaths[0]); ++i)
        if (size_t(kConvPaths[i].path) != i) return false;
    return true;
}
static_assert(rows_in_enum_order(), "kConvPaths lists ConvPath in its order");

const ConvPathRow &row_of(const ConvPlanned &plan) { return kConvPaths[size_t(plan.path)]; }

ConvProcessor conv_processor() {
    ConvProcessor cpu;
    cpu.reference = cpu_reference_kernels();
    cpu.avx512 = gemm512_available();
    cpu.conv512 = !cpu_conv512_ruled_out();
    cpu.avx2 = conv_avx2_built() && cpu_kernel_features().avx2_fma && !cpu.reference && !cpu_gemm512_forced();
    cpu.bf16_native = cpu_has_bf16();
    cpu.gemm512_products = gemm512_preferred();
    cpu.bf16_rule = cpu_bf16_rules_apply();
    return cpu;
}

// "conv 3x3 stride 1x1 pad 1x1, 16x28x28 to 32x28x28, float32, backward:
// im2col (shifted copies), products gemm512 packed"
void log_choice(const ConvDims &d, Precision precision, bool backward, const ConvPlanned &plan) {
    char message[256];
    std::snprintf(message, sizeof message,
                  "conv %lldx%lld stride %lldx%lld pad %lldx%lld, %lldx%lldx%lld to %lldx%lldx%lld, %s%s: %s%s%s",
                  (long long)d.kh, (long long)d.kw, (long long)d.sh, (long long)d.sw, (long long)d.ph,
                  (long long)d.pw, (long long)d.cin, (long long)d.hin, (long long)d.win, (long long)d.cout,
                  (long long)d.hout, (long long)d.wout, precision_name(precision), backward ? ", backward" : "",
                  row_of(plan).name, plan.products ? ", products " : "", plan.products ? plan.products : "");
    log_message(SNN_LOG_INFO, message);
}

const ConvPathRow &row_for(const ConvDims &d, const ConvProcessor &cpu, Precision precision) {
    for (const ConvPathRow &row : kConvPaths)
        if (row.eligible(d, cpu, precision)) return row;
    fail(SNN_ERR_INTERNAL, "no convolution path at %s", precision_name(precision));
}

void *plan(Backend &, Stream *, const Layer &l, int64_t max_batch, bool backward, Precision precision,
           size_t *workspace_bytes) {
    const ConvDims d = conv_dims(l);
    const ConvProcessor cpu = conv_processor();
    const ConvPathRow &row = row_for(d, cpu, precision);
    ConvPlanned *planned = row.plan(l, cpu, row.path, max_batch, backward, workspace_bytes);
    log_choice(d, precision, backward, *planned);
    return planned;
}

void release(Backend &, void *plan) {
    ConvPlanned *planned = static_cast<ConvPlanned *>(plan);
    row_of(*planned).release(planned);
}

void forward(const OpArgs &a) {
    const ConvPlanned &planned = *static_cast<const ConvPlanned *>(a.plan);
    row_of(planned).forward(a, planned);
}

void backward(const OpArgs &a) {
    const ConvPlanned &planned = *static_cast<const ConvPlanned *>(a.plan);
    row_of(planned).backward(a, planned);
}

}  // namespace

ConvPath conv_path_for(const ConvDims &d, Precision precision) {
    return row_for(d, conv_processor(), precision).path;
}

const char *conv_path_name(ConvPath path) { return kConvPaths[size_t(path)].name; }

extern const OpKernels cpu_op_conv{plan, release, forward, backward,
                                   precision_bit(Precision::f32) | precision_bit(Precision::bf16)};

}  // namespace snn
