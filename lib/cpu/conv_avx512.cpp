// Direct convolution with stride 1 on AVX-512 (see cpu/conv_avx512.h).
// Compiled with -ffp-contract=fast (meson.build) like the other kernels.
#include "cpu/conv_avx512.h"

#include <algorithm>

#include "cpu/activation.h"
#include "cpu/conv_padded.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SNN_CONV512 1
#endif

namespace snn {

bool conv512_eligible(const ConvDims &d) {
    return d.sh == 1 && d.sw == 1 && d.ph < d.kh && d.pw < d.kw && d.hout > 0 && d.wout > 0;
}

#if defined(SNN_CONV512)

namespace {

using conv_padded::ceil_div;
using conv_padded::Epilogue;
using conv_padded::forward_padded;
using conv_padded::Padded;
using conv_padded::Weights;

#define SNN_AVX512 __attribute__((target("avx512f")))

constexpr int64_t kTile = 64;  // values of q in the widest product tile

// Floats past a buffer's last plane that a tile may read: its last tile
// ends at most kTile - 1 past the last output, whose taps reach kw - 1 past
// the plane's last row.
inline int64_t slack_floats(const ConvDims &d) { return kTile + 16 + d.kw; }

typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));

// The sum of the 16 lanes, halves added pairwise (a fixed order).
SNN_AVX512 inline float lane_total(__m512 v) {
    const v16 a = v;
    const v8 h = __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7) +
                 __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15);
    const v4 q = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
    return (q[0] + q[2]) + (q[1] + q[3]);
}

// The values of q whose outputs exist: q < count and q mod pitch < width.
// For the vector of q from 16v: the lanes that exist, and the index of the
// first of them in the compact map (rows of width).
struct Lanes {
    uint32_t mask;
    int32_t first;
};

int64_t lane_vectors(int64_t count) { return ceil_div(count, 16) + kTile / 16; }

void fill_lanes(int64_t count, int64_t pitch, int64_t width, Lanes *lanes) {
    int64_t row = 0, col = 0;  // of q
    for (int64_t v = 0; v < lane_vectors(count); ++v) {
        Lanes L{0u, 0};
        for (int64_t l = 0; l < 16; ++l) {
            const int64_t q = 16 * v + l;
            if (q < count && col < width) {
                if (L.mask == 0) L.first = int32_t(row * width + col);
                L.mask |= 1u << l;
            }
            if (++col == pitch) {
                col = 0;
                ++row;
            }
        }
        lanes[v] = L;
    }
}

// Writes `channels` maps of rows x cols from src (maps `map` floats apart)
// into the padded planes at dst, every float of the planes once.
// Each padded row is written 16 floats at a time: lanes over the row's
// values loaded (under a mask, which reads nothing outside it), zeros
// elsewhere.
SNN_AVX512 void pad_maps(const Padded &p, int64_t rows, int64_t cols, const float *src, int64_t map, float *dst) {
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    for (int64_t c = 0; c < p.channels; ++c) {
        float *plane = dst + c * p.plane();
        const float *m = src + c * map;
        std::fill(plane, plane + p.top * p.pitch, 0.0f);
        for (int64_t r = 0; r < rows; ++r) {
            float *row = plane + (p.top + r) * p.pitch;
            const float *values = m + r * cols - p.left;  // row[t] = values[t] for t in [left, left + cols)
            for (int64_t t = 0; t < p.pitch; t += 16) {
                // lanes t + l with left <= t + l < left + cols, and t + l < pitch for the store
                const __m512i at = _mm512_add_epi32(lane, _mm512_set1_epi32(int32_t(t)));
                const __mmask16 inside = _mm512_cmpge_epi32_mask(at, _mm512_set1_epi32(int32_t(p.left))) &
                                         _mm512_cmplt_epi32_mask(at, _mm512_set1_epi32(int32_t(p.left + cols)));
                const __mmask16 store = _mm512_cmplt_epi32_mask(at, _mm512_set1_epi32(int32_t(p.pitch)));
                _mm512_mask_storeu_ps(row + t, store, _mm512_maskz_loadu_ps(inside, values + t));
            }
        }
        std::fill(plane + (p.top + rows) * p.pitch, plane + p.plane(), 0.0f);
    }
}

using Product = conv_padded::Product<Lanes>;

// Rows [0, mr) (at most MR; rows past mr repeat row mr - 1) of the tile of
// NV vectors of q from q0: acc = sum over channels and taps of weight x
// shifted src, then + bias, the epilogue, and the existing lanes stored
// compacted to out.
template <int MR, int NV>
SNN_AVX512 __attribute__((always_inline)) inline void product_tile(const Product &p, const Weights &wt, int64_t mr,
                                                                  int64_t q0, const float *bias, Epilogue e,
                                                                  float *out) {
    const float *wr[MR];
    for (int r = 0; r < MR; ++r) wr[r] = wt.w + std::min<int64_t>(r, mr - 1) * wt.rs;
    __m512 acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
    for (int64_t c = 0; c < p.channels; ++c)
        for (int64_t i = 0; i < p.kh; ++i) {
            const float *s = p.src + c * p.plane + i * p.pitch + q0;
            const int64_t wo = c * wt.cs + i * wt.is;
            for (int64_t j = 0; j < p.kw; ++j) {
                __m512 x[NV];
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) x[v] = _mm512_loadu_ps(s + j + 16 * v);
                const int64_t k = wo + j * wt.js;
#pragma GCC unroll 8
                for (int r = 0; r < MR; ++r) {
                    const __m512 wv = _mm512_set1_ps(wr[r][k]);
#pragma GCC unroll 4
                    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(wv, x[v], acc[r][v]);
                }
            }
        }
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
        const Lanes L = p.lanes[q0 / 16 + v];
        if (L.mask == 0) continue;
        const int n = __builtin_popcount(L.mask);
        const __mmask16 keep = __mmask16(n == 16 ? 0xFFFFu : (1u << n) - 1u);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            if (r >= mr) break;
            __m512 z = acc[r][v];
            if (bias) z = _mm512_add_ps(z, _mm512_set1_ps(bias[r]));
            if (e == Epilogue::relu) z = _mm512_maskz_max_ps(__mmask16(0xFFFFu), z, _mm512_setzero_ps());
            float *o = out + r * p.map + L.first;
            if (L.mask == 0xFFFFu)
                _mm512_storeu_ps(o, z);
            else
                _mm512_mask_storeu_ps(o, keep, _mm512_maskz_compress_ps(__mmask16(L.mask), z));
        }
    }
}

// Output rows [r0, r1) (rows of the weights, maps of out), MR at a time,
// every tile of NV vectors of q.
template <int MR, int NV>
SNN_AVX512 void product_rows(const Product &p, const Weights &wt, int64_t r0, int64_t r1, const float *bias,
                             Epilogue e, float *out) {
    for (int64_t r = r0; r < r1; r += MR) {
        const int64_t mr = std::min<int64_t>(MR, r1 - r);
        const Weights at{wt.w + r * wt.rs, wt.rs, wt.cs, wt.is, wt.js};
        const float *b = bias ? bias + r : nullptr;
        for (int64_t q0 = 0; q0 < p.count; q0 += 16 * NV) product_tile<MR, NV>(p, at, mr, q0, b, e, out + r * p.map);
    }
}

// Output rows [r0, r1): the tile shape (8 x 3, 6 x 4, 8 x 2 or 8 x 1
// vectors) that takes the least time for the rows and q that exist;
// 4, 2 or 1 rows x 3 vectors for ranges of at most 4 rows.
void product(const Product &p, const Weights &wt, int64_t r0, int64_t r1, const float *bias, Epilogue e, float *out) {
    const int64_t rows = r1 - r0;
    if (rows <= 4) {
        if (rows > 2)
            product_rows<4, 3>(p, wt, r0, r1, bias, e, out);
        else if (rows == 2)
            product_rows<2, 3>(p, wt, r0, r1, bias, e, out);
        else
            product_rows<1, 3>(p, wt, r0, r1, bias, e, out);
        return;
    }
    // rows, vectors, and the time of one value relative to 8 x 3 (fewer
    // products per load of a weight or an input run cost more each)
    const int64_t shapes[4][3] = {{8, 3, 8}, {6, 4, 8}, {8, 2, 8}, {8, 1, 10}};
    int best = 0;
    int64_t best_cost = 0;
    for (int k = 0; k < 4; ++k) {
        const int64_t mr = shapes[k][0], width = 16 * shapes[k][1];
        const int64_t cost = ceil_div(rows, mr) * mr * ceil_div(p.count, width) * width * shapes[k][2];
        if (k == 0 || cost < best_cost) {
            best = k;
            best_cost = cost;
        }
    }
    if (best == 0)
        product_rows<8, 3>(p, wt, r0, r1, bias, e, out);
    else if (best == 1)
        product_rows<6, 4>(p, wt, r0, r1, bias, e, out);
    else if (best == 2)
        product_rows<8, 2>(p, wt, r0, r1, bias, e, out);
    else
        product_rows<8, 1>(p, wt, r0, r1, bias, e, out);
}

// The backward pass's buffers: the padded input and output gradient
// (cpu/conv_padded.h).
struct BackwardLayout {
    Padded x, dz;
    int64_t image;  // floats of one image's two buffers
};

BackwardLayout backward_layout(const ConvDims &d) {
    const conv_padded::BackwardPads pads = conv_padded::backward_pads(d);
    BackwardLayout L;
    L.x = pads.x;
    L.dz = pads.dz;
    L.image = L.x.floats() + L.dz.floats();
    return L;
}

// Floats of a table of Lanes for `count` values of q.
int64_t lanes_floats(int64_t count) { return lane_vectors(count) * int64_t(sizeof(Lanes) / sizeof(float)); }

// dw[co + r][c][i0 + a][j0 + b] += sum over the chunk's images and q of
// dz[co + r] x the padded input shifted by (i0 + a, j0 + b), for MR output
// channels (rows past mr repeat row mr - 1) and NI x NJ taps, the sums kept
// in registers.
template <int MR, int NI, int NJ>
SNN_AVX512 void weight_tile(const ConvDims &d, const BackwardLayout &L, int64_t nb, const float *xs, const float *dzs,
                            int64_t co, int64_t mr, int64_t c, int64_t i0, int64_t j0, float *dw) {
    const int64_t count = d.hout * L.x.pitch, K = d.cin * d.kh * d.kw, pitch = L.x.pitch;
    const int64_t dz_at = L.dz.top * L.dz.pitch + L.dz.left;  // q = 0 in the padded gradient
    __m512 acc[MR][NI][NJ];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
        for (int a = 0; a < NI; ++a)
#pragma GCC unroll 7
            for (int b = 0; b < NJ; ++b) acc[r][a][b] = _mm512_setzero_ps();
    for (int64_t k = 0; k < nb; ++k) {
        const float *s = xs + k * L.x.floats() + c * L.x.plane() + i0 * pitch + j0;
        const float *z = dzs + k * L.dz.floats() + co * L.dz.plane() + dz_at;
        int64_t zr[MR];
        for (int r = 0; r < MR; ++r) zr[r] = std::min<int64_t>(r, mr - 1) * L.dz.plane();
        for (int64_t q = 0; q < count; q += 16) {
            const __mmask16 m = __mmask16(count - q >= 16 ? 0xFFFFu : (1u << (count - q)) - 1u);
            __m512 g[MR];
#pragma GCC unroll 4
            for (int r = 0; r < MR; ++r) g[r] = _mm512_maskz_loadu_ps(m, z + zr[r] + q);
#pragma GCC unroll 3
            for (int a = 0; a < NI; ++a)
#pragma GCC unroll 7
                for (int b = 0; b < NJ; ++b) {
                    __m512 xv = _mm512_loadu_ps(s + a * pitch + q + b);
                    __asm__("" : "+v"(xv));  // one load for the MR products, not one each
#pragma GCC unroll 4
                    for (int r = 0; r < MR; ++r) acc[r][a][b] = _mm512_fmadd_ps(g[r], xv, acc[r][a][b]);
                }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
        for (int a = 0; a < NI; ++a)
#pragma GCC unroll 7
            for (int b = 0; b < NJ; ++b)
                if (r < mr) dw[(co + r) * K + (c * d.kh + i0 + a) * d.kw + j0 + b] += lane_total(acc[r][a][b]);
}

// The weight gradient of a chunk, 3 output channels at a time: a 3x3
// kernel 9 taps at a time, other kernels row by row, 7, 5, 3 or 1 taps at a
// time.
void weight_gradient(const ConvDims &d, const BackwardLayout &L, int64_t nb, const float *xs, const float *dzs,
                     float *dw) {
    for (int64_t co = 0; co < d.cout; co += 3) {
        const int64_t mr = std::min<int64_t>(3, d.cout - co);
        for (int64_t c = 0; c < d.cin; ++c) {
            if (d.kh == 3 && d.kw == 3) {
                weight_tile<3, 3, 3>(d, L, nb, xs, dzs, co, mr, c, 0, 0, dw);
                continue;
            }
            for (int64_t i = 0; i < d.kh; ++i) {
                int64_t j = 0;
                for (; d.kw - j >= 7; j += 7) weight_tile<3, 1, 7>(d, L, nb, xs, dzs, co, mr, c, i, j, dw);
                for (; d.kw - j >= 5; j += 5) weight_tile<3, 1, 5>(d, L, nb, xs, dzs, co, mr, c, i, j, dw);
                for (; d.kw - j >= 3; j += 3) weight_tile<3, 1, 3>(d, L, nb, xs, dzs, co, mr, c, i, j, dw);
                for (; j < d.kw; ++j) weight_tile<3, 1, 1>(d, L, nb, xs, dzs, co, mr, c, i, j, dw);
            }
        }
    }
}

}  // namespace

size_t conv512_forward_floats(const ConvDims &d) { return size_t(forward_padded(d).floats() + slack_floats(d)); }

size_t conv512_forward_lanes_floats(const ConvDims &d) {
    return size_t(lanes_floats(d.hout * forward_padded(d).pitch));
}

void conv512_forward_lanes(const ConvDims &d, float *table) {
    const Padded p = forward_padded(d);
    fill_lanes(d.hout * p.pitch, p.pitch, d.wout, reinterpret_cast<Lanes *>(table));
}

int64_t conv512_backward_chunk(const ConvDims &d, int64_t budget_floats) {
    return std::max<int64_t>(1, budget_floats / backward_layout(d).image);
}

size_t conv512_backward_floats(const ConvDims &d, int64_t chunk) {
    const BackwardLayout L = backward_layout(d);
    return size_t(chunk * L.image + slack_floats(d) + lanes_floats(d.hin * L.x.pitch));
}

void conv512_forward_begin(const ConvDims &d, float *workspace) {
    const int64_t floats = forward_padded(d).floats();
    std::fill(workspace + floats, workspace + floats + slack_floats(d), 0.0f);
}

void conv512_forward_image(const ConvDims &d, const float *x, const float *w, const float *b, float *y, float *pre,
                           int64_t co0, int64_t co1, bool padded, const float *table, float *workspace) {
    const Padded p = forward_padded(d);
    const int64_t P = d.hout * d.wout, count = d.hout * p.pitch;
    const Lanes *lanes = reinterpret_cast<const Lanes *>(table);
    if (!padded) pad_maps(p, d.hin, d.win, x, d.hin * d.win, workspace);
    const Product prod{workspace, d.cin, p.plane(), p.pitch, d.kh, d.kw, count, d.wout, P, lanes};
    const Weights wt = conv_padded::forward_weights(d, w);
    const bool fused = !pre && (d.act == Act::identity || d.act == Act::relu);
    float *z = pre ? pre : y;
    product(prod, wt, co0, co1, d.bias ? b : nullptr, fused && d.act == Act::relu ? Epilogue::relu : Epilogue::identity,
            z);
    if (pre)
        activate_copy(d.act, pre + co0 * P, y + co0 * P, (co1 - co0) * P);
    else if (!fused)
        activate_inplace(d.act, y + co0 * P, (co1 - co0) * P);
}

void conv512_backward_images(const ConvDims &d, int64_t nb, const float *x, const float *w, const float *y,
                             const float *pre, float *dy, float *dw, float *db, float *dx, float *workspace) {
    const BackwardLayout L = backward_layout(d);
    const int64_t P = d.hout * d.wout, in_map = d.hin * d.win;
    float *xs = workspace, *dzs = workspace + nb * L.x.floats();
    float *slack = workspace + nb * L.image;
    Lanes *lanes = reinterpret_cast<Lanes *>(slack + slack_floats(d));
    std::fill(slack, slack + slack_floats(d), 0.0f);
    const float *v = pre ? pre : y;
    for (int64_t k = 0; k < nb; ++k) {
        float *g = dy + k * d.cout * P;
        derivative_span(d.act, g, v + k * d.cout * P, g, d.cout * P);
        if (d.bias)
            for (int64_t co = 0; co < d.cout; ++co) db[co] += sum_span(g + co * P, P);
        pad_maps(L.x, d.hin, d.win, x + k * d.cin * in_map, in_map, xs + k * L.x.floats());
        pad_maps(L.dz, d.hout, d.wout, g, P, dzs + k * L.dz.floats());
    }
    weight_gradient(d, L, nb, xs, dzs, dw);
    if (!dx) return;
    // dx[c] = sum over co and taps of w[co][c][kh-1-i][kw-1-j] dz[co] shifted by (i, j)
    const int64_t count = d.hin * L.dz.pitch;
    fill_lanes(count, L.dz.pitch, d.win, lanes);
    const Weights turned = conv_padded::turned_weights(d, w);
    for (int64_t k = 0; k < nb; ++k) {
        const Product prod{dzs + k * L.dz.floats(), d.cout, L.dz.plane(), L.dz.pitch, d.kh, d.kw, count, d.win,
                           in_map, lanes};
        product(prod, turned, 0, d.cin, nullptr, Epilogue::identity, dx + k * d.cin * in_map);
    }
}

#else

// Without x86-64 there is no AVX-512 (the convolution's table never takes
// these kernels), and the kernels below are never called.
size_t conv512_forward_floats(const ConvDims &) { return 0; }
int64_t conv512_backward_chunk(const ConvDims &, int64_t) { return 1; }
size_t conv512_backward_floats(const ConvDims &, int64_t) { return 0; }
size_t conv512_forward_lanes_floats(const ConvDims &) { return 0; }
void conv512_forward_lanes(const ConvDims &, float *) {}
void conv512_forward_begin(const ConvDims &, float *) {}
void conv512_forward_image(const ConvDims &, const float *, const float *, const float *, float *, float *, int64_t,
                           int64_t, bool, const float *, float *) {}
void conv512_backward_images(const ConvDims &, int64_t, const float *, const float *, const float *, const float *,
                             float *, float *, float *, float *, float *) {}

#endif

}  // namespace snn
