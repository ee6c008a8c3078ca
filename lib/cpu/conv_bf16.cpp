// Convolution at bf16 on the CPU: the products of autocast's convolution
// (operands rounded to bf16, float32 sums) by gemm_bf16, over a chunk of
// images lowered at once, with one of two lowerings, or by the direct
// kernels: three rows of the convolution's table (cpu/conv_paths.h), which
// decides which one a layer takes.
//
// Shifted (stride 1, odd kernel, "same" padding (k-1)/2, native bf16): per
// channel, the chunk's images are stacked into one zero-padded map of rows
// wp = win + kw - 1 wide: ph zero rows, then each image's hin rows (pw zeros
// either side) followed by ph zero rows, which pad both it and the next
// image. The lowered row of tap (c, i, j) is then channel c's map shifted by
// i*wp + j, read in place (gemm_bf16_pack_b_rows), and the product's column
// q = img*(hin + ph)*wp + oy*wp + ox is output (oy, ox); the columns past
// wout and the rows between images are computed and dropped. Backward, dZ is laid out the same way with its
// padding, zeros around: dW = dZ xpad-rows^T, and dX is the convolution of
// padded dZ with the flipped kernel W'[c][co][i][j] = W[co][c][kh-1-i][kw-1-j].
// No lowered copy is written, and no col2im pass.
//
// Direct (few taps, stride 1, identity or relu, native bf16: a first
// layer): cpu/conv_direct.h's float32 kernels on operands rounded to bf16
// (each image and W into the workspace, dy in place), whose products of
// bf16 values are exact in float32: the same values as the products above.
// relu's and identity's derivative keeps dZ = dy act'(y) rounded.
//
// im2col (every other convolution; and where the processor lacks AVX-512
// BF16, the emulated product): col[K][nb*P] (K = cin*kh*kw, P = hout*wout),
//   forward   Z[cout][nb*P] = W[cout][K] col
//   backward  dW += dZ col^T ; dcol = W^T dZ, then col2im
//
// As autocast's gradient of a bf16 output, dZ is rounded to bf16 (the
// bias's gradient sums the rounded values).
//
// Chunks are dealt round-robin over the workers, each with its own slot of
// the workspace; each worker's products run on its own thread, so results
// depend on the thread count only through the order in which the workers'
// weight gradients are summed (fixed for a given count).
#include "cpu/conv_bf16.h"

#include <algorithm>
#include <new>

#include "common/error.h"
#include "cpu/activation.h"
#include "cpu/conv_direct.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm_bf16.h"
#include "cpu/multiversion.h"
#include "cpu/thread_pool.h"
#include "core/math.h"
#include "ops/dims.h"

namespace snn {
namespace {

// Lowered columns of one chunk kept under this many floats.
constexpr int64_t kColBudget = int64_t(1) << 18;
// The shifted lowering computes (hin + ph)*wp columns per image for
// hout*wout outputs: taken while that costs at most this factor (3x3
// kernels on 28x28, 14x14 and 7x7 maps: 1.11, 1.22 and 1.47).
constexpr double kShiftedWaste = 1.5;

// path: ConvPath::bf16_direct (the direct kernels, one image at a time),
// bf16_shifted (the shifted lowering) or bf16_im2col.
struct Plan : ConvPlanned {
    int64_t chunk;    // images lowered per product (1 for direct)
    int32_t workers;  // workspace slots planned
    size_t slot;      // bytes per worker, for either lowering
    size_t params;    // floats of dW + db summed per extra worker
};

int64_t taps(const ConvDims &d) { return d.cin * d.kh * d.kw; }

// Floats after the slots shared by the workers (W' or W rounded), then the
// backward's partial gradients.
size_t shared_floats(const ConvDims &d) { return size_t(d.cout * taps(d)); }

// dst = src rounded to bf16 (bf16_round, branch-free so that it vectorises)
SNN_MULTIVERSION
void round_span(const float *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const uint32_t u = float_bits(src[i]);
        const uint32_t nearest = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u, quiet = (u | 0x00400000u) & 0xffff0000u;
        dst[i] = bits_float((u & 0x7fffffffu) > 0x7f800000u ? quiet : nearest);
    }
}

// The stacked maps of the shifted lowering: rows wp wide, top zero rows,
// the floats from one image to the next, and the floats past the last
// channel that shifted rows read (kept zero). A channel of nb images holds
// block(nb) floats.
struct Padded {
    int64_t wp, top, stride, slack;
    int64_t block(int64_t nb) const { return top + nb * stride; }
};
Padded padded_of(const ConvDims &d) {
    const int64_t wp = d.win + d.kw - 1;
    return {wp, d.ph * wp, (d.hin + d.ph) * wp, (d.kh - 1) * wp + d.kw - 1};
}

}  // namespace

bool conv_bf16_shifted_eligible(const ConvDims &d) {
    if (d.sh != 1 || d.sw != 1 || d.kh % 2 == 0 || d.kw % 2 == 0 || 2 * d.ph != d.kh - 1 || 2 * d.pw != d.kw - 1)
        return false;
    return double(padded_of(d).stride) <= kShiftedWaste * double(d.hout * d.wout);
}

namespace {

// ---- im2col ----

// Output columns ox whose input column ox*sw - pw + j lies in [0, win): [*lo, *hi).
void valid_columns(const ConvDims &d, int64_t j, int64_t *lo, int64_t *hi) {
    const int64_t off = j - d.pw;
    const int64_t first = off >= 0 ? 0 : (-off + d.sw - 1) / d.sw;
    const int64_t last = d.win - off <= 0 ? 0 : (d.win - off + d.sw - 1) / d.sw;
    *lo = std::min(first, d.wout);
    *hi = std::max(*lo, std::min(last, d.wout));
}

// col[(c*kh + i)*kw + j][img*P + oy*wout + ox] = x[img][c][oy*sh - ph + i][ox*sw - pw + j], 0 outside
void im2col(const ConvDims &d, int64_t nb, const float *x, float *col) {
    const int64_t P = d.hout * d.wout, ld = nb * P, in_map = d.hin * d.win;
    for (int64_t c = 0; c < d.cin; ++c)
        for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j) {
                float *row = col + ((c * d.kh + i) * d.kw + j) * ld;
                int64_t lo, hi;
                valid_columns(d, j, &lo, &hi);
                for (int64_t img = 0; img < nb; ++img)
                    for (int64_t oy = 0; oy < d.hout; ++oy) {
                        const int64_t iy = oy * d.sh - d.ph + i;
                        float *o = row + img * P + oy * d.wout;
                        if (iy < 0 || iy >= d.hin) {
                            std::fill(o, o + d.wout, 0.0f);
                            continue;
                        }
                        const float *src = x + (img * d.cin + c) * in_map + iy * d.win + j - d.pw;
                        std::fill(o, o + lo, 0.0f);
                        if (d.sw == 1)
                            std::copy(src + lo, src + hi, o + lo);
                        else
                            for (int64_t ox = lo; ox < hi; ++ox) o[ox] = src[ox * d.sw];
                        std::fill(o + hi, o + d.wout, 0.0f);
                    }
            }
}

// The adjoint of im2col: dx (zeroed first) += col at every place an input
// value was copied to.
void col2im(const ConvDims &d, int64_t nb, const float *col, float *dx) {
    const int64_t P = d.hout * d.wout, ld = nb * P, in_map = d.hin * d.win;
    std::fill(dx, dx + nb * d.cin * in_map, 0.0f);
    for (int64_t c = 0; c < d.cin; ++c)
        for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j) {
                const float *row = col + ((c * d.kh + i) * d.kw + j) * ld;
                int64_t lo, hi;
                valid_columns(d, j, &lo, &hi);
                for (int64_t img = 0; img < nb; ++img)
                    for (int64_t oy = 0; oy < d.hout; ++oy) {
                        const int64_t iy = oy * d.sh - d.ph + i;
                        if (iy < 0 || iy >= d.hin) continue;
                        float *dst = dx + (img * d.cin + c) * in_map + iy * d.win + j - d.pw;
                        const float *o = row + img * P + oy * d.wout;
                        if (d.sw == 1)
                            for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += o[ox];
                        else
                            for (int64_t ox = lo; ox < hi; ++ox) dst[ox * d.sw] += o[ox];
                    }
            }
}

// ---- shifted ----

// xpad[c] = the nb images' channel c stacked (Padded), then `slack` zeros.
void pad_images(const ConvDims &d, const Padded &p, int64_t nb, const float *x, float *xpad) {
    for (int64_t c = 0; c < d.cin; ++c) {
        float *channel = xpad + c * p.block(nb);
        std::fill(channel, channel + p.top, 0.0f);
        for (int64_t img = 0; img < nb; ++img) {
            float *map = channel + p.top + img * p.stride;
            const float *src = x + (img * d.cin + c) * d.hin * d.win;
            for (int64_t iy = 0; iy < d.hin; ++iy) {
                float *row = map + iy * p.wp;
                std::fill(row, row + d.pw, 0.0f);
                std::copy(src + iy * d.win, src + (iy + 1) * d.win, row + d.pw);
                std::fill(row + d.pw + d.win, row + p.wp, 0.0f);
            }
            std::fill(map + d.hin * p.wp, map + p.stride, 0.0f);
        }
    }
    std::fill(xpad + d.cin * p.block(nb), xpad + d.cin * p.block(nb) + p.slack, 0.0f);
}

// rows[(c*kh + i)*kw + j] = the channel c of a padded chunk (channels of
// nb maps) shifted by tap (i, j)
void shifted_rows(const ConvDims &d, const Padded &p, int64_t channels, int64_t nb, const float *pad,
                  const float **rows) {
    for (int64_t c = 0; c < channels; ++c)
        for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j) rows[(c * d.kh + i) * d.kw + j] = pad + c * p.block(nb) + i * p.wp + j;
}

// ---- the passes ----

struct Job {
    const Plan *plan;
    const ConvDims *d;
    int64_t n, chunk;
    const float *x, *w, *b, *y;
    float *out, *dy, *dw, *db, *dx;
    char *workspace;
    float *pre;      // z kept for gelu and silu, or null
    float *shared;   // shifted backward: W' [cin][cout*kh*kw]; direct: W rounded
};

// A worker's slot. im2col: col [K][chunk*P], z [cout][chunk*P]. Shifted:
// xpad [cin][block] + slack (backward: then dX before its scatter), z
// [cout][block] + slack (backward: padded dZ), the row pointers.
// Then the packing.
struct Slot {
    float *col, *z;
    const float **rows;
    void *pack;
};
// Direct: the rounded image [cin*hin*win], then the direct kernels' space.
Slot slot_of(const Plan &plan, const ConvDims &d, char *workspace, int32_t worker) {
    float *base = reinterpret_cast<float *>(workspace + size_t(worker) * plan.slot);
    if (plan.path == ConvPath::bf16_direct)
        return {base, base + d.cin * d.hin * d.win, /*rows=*/nullptr, /*pack=*/nullptr};
    if (plan.path == ConvPath::bf16_im2col) {
        const int64_t ld = plan.chunk * d.hout * d.wout;
        float *z = base + taps(d) * ld;
        return {base, z, /*rows=*/nullptr, z + d.cout * ld};
    }
    const Padded p = padded_of(d);
    const int64_t block = p.block(plan.chunk);
    float *z = base + d.cin * block + p.slack;
    const int64_t floats = (d.cin + d.cout) * block + 2 * p.slack;  // then the pointers, 64-byte aligned
    const float **rows = reinterpret_cast<const float **>(base + (floats + 15) / 16 * 16);
    return {base, z, rows, rows + std::max(taps(d), d.cout * d.kh * d.kw)};
}

// y's rows from z's: out = act(z + b), z kept in pre for gelu and silu.
// z row (img, co, oy) at z + co*ld + img*zimg + oy*zrow.
void bias_activate(const Job &j, int64_t i0, int64_t nb, const float *z, int64_t ld, int64_t zimg, int64_t zrow) {
    const ConvDims &d = *j.d;
    const int64_t P = d.hout * d.wout;
    for (int64_t img = 0; img < nb; ++img)
        for (int64_t co = 0; co < d.cout; ++co) {
            const float bias = d.bias ? j.b[co] : 0.0f;
            for (int64_t oy = 0; oy < d.hout; ++oy) {
                const float *src = z + co * ld + img * zimg + oy * zrow;
                const int64_t at = ((i0 + img) * d.cout + co) * P + oy * d.wout;
                if (j.pre) {
                    activate_span(Act::identity, src, bias, j.pre + at, d.wout);
                    activate_span(d.act, j.pre + at, 0.0f, j.out + at, d.wout);
                } else {
                    activate_span(d.act, src, bias, j.out + at, d.wout);
                }
            }
        }
}

// Per chunk: Z = W lowered(x) ; out = act(Z + b) (z kept for gelu and silu)
void forward_worker(void *ctx, int32_t worker, int32_t workers) {
    const Job &j = *static_cast<const Job *>(ctx);
    const ConvDims &d = *j.d;
    const int64_t K = taps(d), P = d.hout * d.wout, in_size = d.cin * d.hin * d.win;
    const Slot s = slot_of(*j.plan, d, j.workspace, worker);
    const Padded p = padded_of(d);
    for (int64_t i0 = worker * j.chunk; i0 < j.n; i0 += workers * j.chunk) {
        const int64_t nb = std::min(j.chunk, j.n - i0);
        if (j.plan->path == ConvPath::bf16_direct) {
            for (int64_t img = i0; img < i0 + nb; ++img) {
                round_span(j.x + img * in_size, s.col, in_size);
                conv_direct_forward_image(d, s.col, j.shared, j.b, j.out + img * d.cout * P,
                                          j.pre ? j.pre + img * d.cout * P : nullptr, s.z);
            }
        } else if (j.plan->path == ConvPath::bf16_shifted) {
            const int64_t ld = nb * p.stride;
            pad_images(d, p, nb, j.x + i0 * in_size, s.col);
            shifted_rows(d, p, d.cin, nb, s.col, s.rows);
            char *b = static_cast<char *>(s.pack) + gemm_bf16_a_bytes(d.cout, K);
            gemm_bf16_pack_a(/*trans_a=*/false, d.cout, K, j.w, K, s.pack);
            gemm_bf16_pack_b_rows(/*trans_b=*/false, K, ld, s.rows, b);
            gemm_bf16_packed(d.cout, ld, K, s.pack, b, s.z, ld, /*accumulate=*/false);
            bias_activate(j, i0, nb, s.z, ld, p.stride, p.wp);
        } else {
            const int64_t ld = nb * P;
            im2col(d, nb, j.x + i0 * in_size, s.col);
            gemm_bf16(/*trans_a=*/false, /*trans_b=*/false, d.cout, ld, K, j.w, K, s.col, ld, s.z, ld,
                      /*accumulate=*/false, s.pack);
            bias_activate(j, i0, nb, s.z, ld, P, d.wout);
        }
    }
}

// dZ = dy act'(y or z) of the chunk's images, row (img, co, oy) to
// dz + co*ld + img*zimg + oy*zrow.
void gather_dz(const Job &j, int64_t i0, int64_t nb, float *dz, int64_t ld, int64_t zimg, int64_t zrow) {
    const ConvDims &d = *j.d;
    const int64_t P = d.hout * d.wout;
    for (int64_t img = 0; img < nb; ++img)
        for (int64_t co = 0; co < d.cout; ++co)
            for (int64_t oy = 0; oy < d.hout; ++oy) {
                const int64_t at = ((i0 + img) * d.cout + co) * P + oy * d.wout;
                float *row = dz + co * ld + img * zimg + oy * zrow;
                derivative_span(d.act, j.dy + at, (j.pre ? j.pre : j.y) + at, row, d.wout);
                round_span(row, row, d.wout);
            }
}

// The shifted backward of one chunk: padded dZ ; db += sums of dZ ;
// dW += dZ xpad-rows^T ; dX = W' dZ-rows, scattered into dx.
void shifted_backward_chunk(const Job &j, const Slot &s, int64_t i0, int64_t nb, float *dw, float *db) {
    const ConvDims &d = *j.d;
    const Padded p = padded_of(d);
    const int64_t K = taps(d), ld = nb * p.stride, block = p.block(nb), in_size = d.cin * d.hin * d.win;
    const int64_t kk = d.kh * d.kw;
    float *dz = s.z + p.top + d.pw;  // dZ[co][q], q as the forward's columns: row stride block
    std::fill(s.z, s.z + d.cout * block + p.slack, 0.0f);
    gather_dz(j, i0, nb, dz, block, p.stride, p.wp);
    if (d.bias)
        for (int64_t co = 0; co < d.cout; ++co) db[co] += sum_span(s.z + co * block, block);
    pad_images(d, p, nb, j.x + i0 * in_size, s.col);
    shifted_rows(d, p, d.cin, nb, s.col, s.rows);
    // dW[co][k] += sum over q of dZ[co][q] xpad-row_k[q]
    char *b = static_cast<char *>(s.pack) + gemm_bf16_a_bytes(d.cout, ld);
    gemm_bf16_pack_a(/*trans_a=*/false, d.cout, ld, dz, block, s.pack);
    gemm_bf16_pack_b_rows(/*trans_b=*/true, ld, K, s.rows, b);
    gemm_bf16_packed(d.cout, K, ld, s.pack, b, dw, K, /*accumulate=*/true);
    if (!j.dx) return;
    // dX[c][q] = sum over (co, i, j) of W'[c][co][i][j] dZpad[co][q + i*wp + j], over xpad's place
    shifted_rows(d, p, d.cout, nb, s.z, s.rows);
    b = static_cast<char *>(s.pack) + gemm_bf16_a_bytes(d.cin, d.cout * kk);
    gemm_bf16_pack_a(/*trans_a=*/false, d.cin, d.cout * kk, j.shared, d.cout * kk, s.pack);
    gemm_bf16_pack_b_rows(/*trans_b=*/false, d.cout * kk, ld, s.rows, b);
    gemm_bf16_packed(d.cin, ld, d.cout * kk, s.pack, b, s.col, ld, /*accumulate=*/false);
    for (int64_t img = 0; img < nb; ++img)
        for (int64_t c = 0; c < d.cin; ++c)
            for (int64_t iy = 0; iy < d.hin; ++iy) {
                const float *src = s.col + c * ld + img * p.stride + iy * p.wp;
                std::copy(src, src + d.win, j.dx + (i0 + img) * in_size + (c * d.hin + iy) * d.win);
            }
}

// Per chunk: dZ = dy act'(y or z) ; db += row sums of dZ ; dW += dZ
// lowered(x)^T ; dx from W^T dZ. Worker 0 sums into dw and db, the others
// into their own slots.
void backward_worker(void *ctx, int32_t worker, int32_t workers) {
    const Job &j = *static_cast<const Job *>(ctx);
    const ConvDims &d = *j.d;
    const int64_t K = taps(d), P = d.hout * d.wout, in_size = d.cin * d.hin * d.win;
    const Slot s = slot_of(*j.plan, d, j.workspace, worker);
    float *dw = j.dw, *db = j.db;
    if (worker > 0) {
        dw = j.shared + shared_floats(d) + size_t(worker - 1) * j.plan->params;
        db = dw + d.cout * K;
    }
    std::fill(dw, dw + d.cout * K, 0.0f);
    if (d.bias) std::fill(db, db + d.cout, 0.0f);
    for (int64_t i0 = worker * j.chunk; i0 < j.n; i0 += workers * j.chunk) {
        const int64_t nb = std::min(j.chunk, j.n - i0), ld = nb * P;
        if (j.plan->path == ConvPath::bf16_direct) {
            for (int64_t img = i0; img < i0 + nb; ++img) {
                float *dy = j.dy + img * d.cout * P;
                round_span(dy, dy, d.cout * P);
                round_span(j.x + img * in_size, s.col, in_size);
                conv_direct_backward_image(d, s.col, j.shared, j.y + img * d.cout * P, /*pre=*/nullptr, dy, dw, db,
                                           j.dx ? j.dx + img * in_size : nullptr, s.z);
            }
            continue;
        }
        if (j.plan->path == ConvPath::bf16_shifted) {
            shifted_backward_chunk(j, s, i0, nb, dw, db);
            continue;
        }
        gather_dz(j, i0, nb, s.z, ld, P, d.wout);
        if (d.bias)
            for (int64_t co = 0; co < d.cout; ++co) db[co] += sum_span(s.z + co * ld, ld);
        im2col(d, nb, j.x + i0 * in_size, s.col);
        gemm_bf16(/*trans_a=*/false, /*trans_b=*/true, d.cout, K, ld, s.z, ld, s.col, ld, dw, K, /*accumulate=*/true,
                  s.pack);
        if (!j.dx) continue;
        gemm_bf16(/*trans_a=*/true, /*trans_b=*/false, K, ld, d.cout, j.w, K, s.z, ld, s.col, ld,
                  /*accumulate=*/false, s.pack);
        col2im(d, nb, s.col, j.dx + i0 * in_size);
    }
}

int32_t workers_for(const Plan &p, int64_t n) {
    const int64_t chunks = (n + p.chunk - 1) / p.chunk;
    return int32_t(std::max<int64_t>(1, std::min<int64_t>({int64_t(cpu_threads()), int64_t(p.workers), chunks})));
}

// The chunk that deals n images evenly over the workers (conv.cpp's rule):
// as few rounds as the planned chunk allows, the images split equally.
int64_t balanced_chunk(const Plan &p, int64_t n, int32_t workers) {
    const int64_t per_round = int64_t(workers) * p.chunk;
    const int64_t rounds = (n + per_round - 1) / per_round;
    return std::max<int64_t>(1, (n + workers * rounds - 1) / (workers * rounds));
}

// Bytes of a worker's slot for a chunk of nb images.
size_t im2col_slot(const ConvDims &d, int64_t nb, bool backward) {
    const int64_t K = taps(d), ld = nb * d.hout * d.wout;
    size_t pack = gemm_bf16_bytes(d.cout, ld, K);
    if (backward) pack = std::max({pack, gemm_bf16_bytes(d.cout, K, ld), gemm_bf16_bytes(K, ld, d.cout)});
    return size_t((K + d.cout) * ld) * sizeof(float) + pack;
}

size_t shifted_slot(const ConvDims &d, int64_t nb, bool backward) {
    const Padded p = padded_of(d);
    const int64_t K = taps(d), ld = nb * p.stride, kk = d.kh * d.kw;
    size_t pack = gemm_bf16_bytes(d.cout, ld, K);
    if (backward) pack = std::max({pack, gemm_bf16_bytes(d.cout, K, ld), gemm_bf16_bytes(d.cin, ld, d.cout * kk)});
    const size_t floats = size_t(((d.cin + d.cout) * p.block(nb) + 2 * p.slack + 15) / 16 * 16);
    return floats * sizeof(float) + size_t(std::max(K, d.cout * kk)) * sizeof(float *) + pack;
}

size_t direct_slot(const ConvDims &d, bool backward) {
    const size_t kernels = backward ? conv_direct_backward_floats(d) : conv_direct_forward_floats(d);
    return (size_t(d.cin * d.hin * d.win) + kernels) * sizeof(float);
}

// The layout after the slots.
float *shared_of(const Plan &p, void *workspace) {
    return reinterpret_cast<float *>(static_cast<char *>(workspace) + size_t(p.workers) * p.slot);
}

}  // namespace

ConvPlanned *conv_bf16_plan(const Layer &l, const ConvProcessor &, ConvPath path, int64_t max_batch, bool backward,
                           size_t *workspace_bytes) {
    const ConvDims d = conv_dims(l);
    const int64_t K = taps(d), P = d.hout * d.wout;
    const int32_t workers = std::max<int32_t>(1, std::min<int64_t>(cpu_threads(), max_batch));
    const bool direct = path == ConvPath::bf16_direct, shifted = path == ConvPath::bf16_shifted;
    const int64_t per_image = K * (shifted ? padded_of(d).stride : P);
    int64_t chunk = direct ? 1 : std::max<int64_t>(1, kColBudget / std::max<int64_t>(1, per_image));
    chunk = std::min(chunk, (max_batch + workers - 1) / workers);
    const size_t slot = direct    ? direct_slot(d, backward)
                        : shifted ? shifted_slot(d, chunk, backward)
                                  : im2col_slot(d, chunk, backward);
    Plan *p = new (std::nothrow) Plan{};
    if (!p) fail(SNN_ERR_OUT_OF_MEMORY, "out of host memory");
    p->path = path;
    p->products = nullptr;
    p->chunk = chunk;
    p->workers = workers;
    p->slot = (slot + 63) / 64 * 64;
    p->params = size_t(d.cout * K + d.cout);
    *workspace_bytes = size_t(workers) * p->slot + shared_floats(d) * sizeof(float);
    if (backward) *workspace_bytes += size_t(workers - 1) * p->params * sizeof(float);
    return p;
}

void conv_bf16_release(ConvPlanned *plan) noexcept { delete static_cast<Plan *>(plan); }

void conv_bf16_forward(const OpArgs &a, const ConvPlanned &plan) {
    const ConvDims d = conv_dims(*a.l);
    const Plan &p = static_cast<const Plan &>(plan);
    const int32_t workers = workers_for(p, a.n);
    const float *w = a.params + a.l->weight_offset;
    float *shared = shared_of(p, a.workspace);
    if (p.path == ConvPath::bf16_direct) round_span(w, shared, d.cout * taps(d));
    Job job{&p,
            &d,
            a.n,
            balanced_chunk(p, a.n, workers),
            a.x[0],
            w,
            a.params + a.l->bias_offset,
            /*y=*/nullptr,
            /*out=*/a.y,
            /*dy=*/nullptr,
            /*dw=*/nullptr,
            /*db=*/nullptr,
            /*dx=*/nullptr,
            static_cast<char *>(a.workspace),
            act_uses_input(d.act) ? a.aux : nullptr,
            shared};
    parallel_run(workers, forward_worker, &job);
}

void conv_bf16_backward(const OpArgs &a, const ConvPlanned &plan) {
    const ConvDims d = conv_dims(*a.l);
    const Plan &p = static_cast<const Plan &>(plan);
    float *dw = a.grads + a.l->weight_offset, *db = a.grads + a.l->bias_offset;
    const int32_t workers = workers_for(p, a.n);
    float *shared = shared_of(p, a.workspace), *partials = shared + shared_floats(d);
    const float *w = a.params + a.l->weight_offset;
    if (p.path == ConvPath::bf16_direct) round_span(w, shared, d.cout * taps(d));
    if (p.path == ConvPath::bf16_shifted && a.dx[0]) {
        // W'[c][(co*kh + i)*kw + j] = W[co][c][kh-1-i][kw-1-j]
        const int64_t kk = d.kh * d.kw;
        for (int64_t c = 0; c < d.cin; ++c)
            for (int64_t co = 0; co < d.cout; ++co)
                for (int64_t t = 0; t < kk; ++t) shared[(c * d.cout + co) * kk + t] = w[(co * d.cin + c) * kk + kk - 1 - t];
    }
    Job job{&p,
            &d,
            a.n,
            balanced_chunk(p, a.n, workers),
            a.x[0],
            w,
            /*b=*/nullptr,
            a.y,
            /*out=*/nullptr,
            a.dy,
            dw,
            db,
            a.dx[0],
            static_cast<char *>(a.workspace),
            act_uses_input(d.act) ? a.aux : nullptr,
            shared};
    parallel_run(workers, backward_worker, &job);
    // The other workers' partial gradients into worker 0's, in order.
    const size_t params = size_t(d.cout * taps(d));
    for (int32_t k = 1; k < workers; ++k) {
        const float *part = partials + size_t(k - 1) * p.params;
        for (size_t i = 0; i < params; ++i) dw[i] += part[i];
        if (d.bias)
            for (int64_t co = 0; co < d.cout; ++co) db[co] += part[params + size_t(co)];
    }
}

}  // namespace snn
