// Direct convolution with stride 1 on AVX2 and FMA (see cpu/conv_avx2.h).
// Compiled with -ffp-contract=fast (meson.build) like the other kernels; the
// vector code is compiled for AVX2 and FMA by target attributes, so the rest
// of the library keeps the baseline instruction set.
#include "cpu/conv_avx2.h"

#include <algorithm>

#include "cpu/activation.h"
#include "cpu/conv_padded.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(_WIN32)
#include <immintrin.h>
#define SNN_CONV_AVX2 1
#endif

namespace snn {

#if defined(SNN_CONV_AVX2)

bool conv_avx2_built() { return true; }

namespace {

using conv_padded::ceil_div;
using conv_padded::Epilogue;
using conv_padded::forward_padded;
using conv_padded::Padded;
using conv_padded::Weights;

#define SNN_AVX2 __attribute__((target("avx2,fma")))

constexpr int64_t kTile = 24;  // values of q in the widest product tile

// Floats past a buffer's last plane that a tile may read: its last tile
// ends at most kTile - 1 past the last output, whose taps reach kw - 1 past
// the plane's last row.
inline int64_t slack_floats(const ConvDims &d) { return kTile + 8 + d.kw; }

// The sum of the 8 lanes, halves added pairwise (a fixed order).
SNN_AVX2 inline float lane_total(__m256 v) {
    const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));  // lanes 0 + 2, 1 + 3
    return _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
}

// The values of q whose outputs exist: q < count and q mod pitch < width.
// For the vector of q from 8v: the lanes that exist, the index of the first
// of them in the compact map (rows of width), and the permutation that
// gathers them to the front (lane k takes lane perm >> 3k & 7).
struct Lanes {
    uint32_t mask;
    int32_t first;
    uint32_t perm;
};

int64_t lane_vectors(int64_t count) { return ceil_div(count, 8) + kTile / 8; }

void fill_lanes(int64_t count, int64_t pitch, int64_t width, Lanes *lanes) {
    int64_t row = 0, col = 0;  // of q
    for (int64_t v = 0; v < lane_vectors(count); ++v) {
        Lanes L{0u, 0, 0u};
        int kept = 0;
        for (int64_t l = 0; l < 8; ++l) {
            const int64_t q = 8 * v + l;
            if (q < count && col < width) {
                if (L.mask == 0) L.first = int32_t(row * width + col);
                L.mask |= 1u << l;
                L.perm |= uint32_t(l) << (3 * kept++);
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
void pad_maps(const Padded &p, int64_t rows, int64_t cols, const float *src, int64_t map, float *dst) {
    const int64_t right = std::min(p.pitch, p.left + cols);
    for (int64_t c = 0; c < p.channels; ++c) {
        float *plane = dst + c * p.plane();
        const float *m = src + c * map;
        std::fill(plane, plane + p.top * p.pitch, 0.0f);
        for (int64_t r = 0; r < rows; ++r) {
            float *row = plane + (p.top + r) * p.pitch;
            std::fill(row, row + p.left, 0.0f);
            std::copy(m + r * cols, m + r * cols + (right - p.left), row + p.left);
            std::fill(row + right, row + p.pitch, 0.0f);
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
SNN_AVX2 __attribute__((always_inline)) inline void product_tile(const Product &p, const Weights &wt, int64_t mr,
                                                                int64_t q0, const float *bias, Epilogue e,
                                                                float *out) {
    const float *wr[MR];
    for (int r = 0; r < MR; ++r) wr[r] = wt.w + std::min<int64_t>(r, mr - 1) * wt.rs;
    __m256 acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
    for (int64_t c = 0; c < p.channels; ++c)
        for (int64_t i = 0; i < p.kh; ++i) {
            const float *s = p.src + c * p.plane + i * p.pitch + q0;
            const int64_t wo = c * wt.cs + i * wt.is;
            for (int64_t j = 0; j < p.kw; ++j) {
                __m256 x[NV];
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) x[v] = _mm256_loadu_ps(s + j + 8 * v);
                const int64_t k = wo + j * wt.js;
#pragma GCC unroll 8
                for (int r = 0; r < MR; ++r) {
                    const __m256 wv = _mm256_broadcast_ss(wr[r] + k);
#pragma GCC unroll 4
                    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(wv, x[v], acc[r][v]);
                }
            }
        }
    const __m256i shifts = _mm256_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
        const Lanes L = p.lanes[q0 / 8 + v];
        if (L.mask == 0) continue;
        const __m256i perm =
            _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int32_t(L.perm)), shifts), _mm256_set1_epi32(7));
        const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(__builtin_popcount(L.mask)), lane);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            if (r >= mr) break;
            __m256 z = acc[r][v];
            if (bias) z = _mm256_add_ps(z, _mm256_broadcast_ss(bias + r));
            if (e == Epilogue::relu) z = _mm256_max_ps(z, _mm256_setzero_ps());
            float *o = out + r * p.map + L.first;
            if (L.mask == 0xFFu)
                _mm256_storeu_ps(o, z);
            else
                _mm256_maskstore_ps(o, keep, _mm256_permutevar8x32_ps(z, perm));
        }
    }
}

// Output rows [r0, r1) (rows of the weights, maps of out), MR at a time,
// every tile of NV vectors of q.
template <int MR, int NV>
SNN_AVX2 void product_rows(const Product &p, const Weights &wt, int64_t r0, int64_t r1, const float *bias, Epilogue e,
                           float *out) {
    for (int64_t r = r0; r < r1; r += MR) {
        const int64_t mr = std::min<int64_t>(MR, r1 - r);
        const Weights at{wt.w + r * wt.rs, wt.rs, wt.cs, wt.is, wt.js};
        const float *b = bias ? bias + r : nullptr;
        for (int64_t q0 = 0; q0 < p.count; q0 += 8 * NV) product_tile<MR, NV>(p, at, mr, q0, b, e, out + r * p.map);
    }
}

// Output rows [r0, r1): the tile shape (4 x 3, 6 x 2, 4 x 2 or 4 x 1
// vectors) that takes the least time for the rows and q that exist;
// 2 or 1 rows x 3 vectors for ranges of at most 2 rows.
void product(const Product &p, const Weights &wt, int64_t r0, int64_t r1, const float *bias, Epilogue e, float *out) {
    const int64_t rows = r1 - r0;
    if (rows <= 2) {
        if (rows == 2)
            product_rows<2, 3>(p, wt, r0, r1, bias, e, out);
        else
            product_rows<1, 3>(p, wt, r0, r1, bias, e, out);
        return;
    }
    // rows, vectors, and the time of one value relative to 4 x 3 (fewer
    // products per load of a weight or an input run cost more each)
    const int64_t shapes[4][3] = {{4, 3, 8}, {6, 2, 8}, {4, 2, 9}, {4, 1, 12}};
    int best = 0;
    int64_t best_cost = 0;
    for (int k = 0; k < 4; ++k) {
        const int64_t mr = shapes[k][0], width = 8 * shapes[k][1];
        const int64_t cost = ceil_div(rows, mr) * mr * ceil_div(p.count, width) * width * shapes[k][2];
        if (k == 0 || cost < best_cost) {
            best = k;
            best_cost = cost;
        }
    }
    if (best == 0)
        product_rows<4, 3>(p, wt, r0, r1, bias, e, out);
    else if (best == 1)
        product_rows<6, 2>(p, wt, r0, r1, bias, e, out);
    else if (best == 2)
        product_rows<4, 2>(p, wt, r0, r1, bias, e, out);
    else
        product_rows<4, 1>(p, wt, r0, r1, bias, e, out);
}

// The backward pass's buffers: the padded input and output gradient
// (cpu/conv_padded.h), and the output gradient transposed, which the weight
// gradient reads: dzt[p][co] for the P outputs p, rows of `lanes` floats
// (cout rounded up to a vector, zeros past cout).
struct BackwardLayout {
    Padded x, dz;
    int64_t lanes;  // floats of a row of the transposed gradient
    int64_t image;  // floats of one image's three buffers
};

BackwardLayout backward_layout(const ConvDims &d) {
    const conv_padded::BackwardPads pads = conv_padded::backward_pads(d);
    BackwardLayout L;
    L.x = pads.x;
    L.dz = pads.dz;
    L.lanes = ceil_div(d.cout, 8) * 8;
    L.image = L.x.floats() + L.dz.floats() + d.hout * d.wout * L.lanes;
    return L;
}

// Floats of a table of Lanes for `count` values of q.
int64_t lanes_floats(int64_t count) { return lane_vectors(count) * int64_t(sizeof(Lanes) / sizeof(float)); }

// dzt[p][co] = g[co][p] for one image (zeros for co past cout).
void transpose_gradient(const ConvDims &d, const BackwardLayout &L, const float *g, float *dzt) {
    const int64_t P = d.hout * d.wout;
    for (int64_t p = 0; p < P; ++p) {
        float *row = dzt + p * L.lanes;
        for (int64_t co = 0; co < d.cout; ++co) row[co] = g[co * P + p];
        std::fill(row + d.cout, row + L.lanes, 0.0f);
    }
}

constexpr int kTaps = 6;  // taps of a weight gradient tile

// Taps (cin kh kw) up to which the weight gradient sums lanes of the padded
// output gradient (weight_gradient_sums) instead of transposing it.
constexpr int64_t kFewTaps = 32;

// dw[co0 + co][k0 + t] += sum over the chunk's images and outputs p of
// dz[co0 + co][p] x the padded input at tap k0 + t, for 8 NV output channels
// (those below cout are stored) and nt (at most kTaps; taps past nt repeat
// tap nt - 1) taps numbered k = (c kh + i) kw + j: each output's gradients
// of the channels are a vector of dzt, each tap's input a broadcast float,
// and the sums stay in registers (kTaps NV of the 16) until the end.
template <int NV>
SNN_AVX2 void weight_tile(const ConvDims &d, const BackwardLayout &L, int64_t nb, const float *xs, const float *dzt,
                          int64_t co0, int64_t k0, int64_t nt, float *dw) {
    const int64_t K = d.cin * d.kh * d.kw, P = d.hout * d.wout, pitch = L.x.pitch;
    int64_t off[kTaps];
    for (int t = 0; t < kTaps; ++t) {
        const int64_t k = k0 + std::min<int64_t>(t, nt - 1), c = k / (d.kh * d.kw), i = k / d.kw % d.kh, j = k % d.kw;
        off[t] = c * L.x.plane() + i * pitch + j;
    }
    __m256 acc[kTaps][NV];
#pragma GCC unroll 6
    for (int t = 0; t < kTaps; ++t)
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) acc[t][v] = _mm256_setzero_ps();
    for (int64_t img = 0; img < nb; ++img) {
        const float *x = xs + img * L.x.floats();
        const float *z = dzt + img * P * L.lanes + co0;
        for (int64_t oy = 0; oy < d.hout; ++oy) {
            const float *xr = x + oy * pitch;
            const float *zr = z + oy * d.wout * L.lanes;
            for (int64_t ox = 0; ox < d.wout; ++ox) {
                __m256 g[NV];
#pragma GCC unroll 2
                for (int v = 0; v < NV; ++v) g[v] = _mm256_loadu_ps(zr + ox * L.lanes + 8 * v);
#pragma GCC unroll 6
                for (int t = 0; t < kTaps; ++t) {
                    const __m256 xv = _mm256_broadcast_ss(xr + off[t] + ox);
#pragma GCC unroll 2
                    for (int v = 0; v < NV; ++v) acc[t][v] = _mm256_fmadd_ps(xv, g[v], acc[t][v]);
                }
            }
        }
    }
    alignas(32) float sums[kTaps][NV * 8];
#pragma GCC unroll 6
    for (int t = 0; t < kTaps; ++t)
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) _mm256_store_ps(sums[t] + 8 * v, acc[t][v]);
    const int64_t channels = std::min<int64_t>(8 * NV, d.cout - co0);
    for (int64_t t = 0; t < nt; ++t)
        for (int64_t co = 0; co < channels; ++co) dw[(co0 + co) * K + k0 + t] += sums[t][co];
}

// The weight gradient of a chunk: tiles of 16 (or, for the last 8 or
// fewer, 8) output channels x kTaps taps.
void weight_gradient(const ConvDims &d, const BackwardLayout &L, int64_t nb, const float *xs, const float *dzt,
                     float *dw) {
    const int64_t K = d.cin * d.kh * d.kw;
    for (int64_t co = 0; co < d.cout; co += 16)
        for (int64_t k = 0; k < K; k += kTaps) {
            const int64_t nt = std::min<int64_t>(kTaps, K - k);
            if (d.cout - co > 8)
                weight_tile<2>(d, L, nb, xs, dzt, co, k, nt, dw);
            else
                weight_tile<1>(d, L, nb, xs, dzt, co, k, nt, dw);
        }
}

// For few taps (the first layers of image networks), where transposing
// the output gradient would cost as much as the product:
// dw[co + r][c][i][j0 + b] += sum over the chunk's images and q of
// dz[co + r] x the padded input shifted by (i, j0 + b), for MR output
// channels (rows past mr repeat row mr - 1) and NJ taps of a kernel row, the
// sums kept in registers (MR x NJ + MR + 1 of the 16) and their lanes added
// at the end.
template <int MR, int NJ>
SNN_AVX2 void weight_tile_sums(const ConvDims &d, const BackwardLayout &L, int64_t nb, const float *xs,
                               const float *dzs, int64_t co, int64_t mr, int64_t c, int64_t i, int64_t j0, float *dw) {
    const int64_t count = d.hout * L.x.pitch, K = d.cin * d.kh * d.kw, pitch = L.x.pitch;
    const int64_t dz_at = L.dz.top * L.dz.pitch + L.dz.left;  // q = 0 in the padded gradient
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 acc[MR][NJ];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int b = 0; b < NJ; ++b) acc[r][b] = _mm256_setzero_ps();
    int64_t zr[MR];
    for (int r = 0; r < MR; ++r) zr[r] = std::min<int64_t>(r, mr - 1) * L.dz.plane();
    for (int64_t k = 0; k < nb; ++k) {
        const float *s = xs + k * L.x.floats() + c * L.x.plane() + i * pitch + j0;
        const float *z = dzs + k * L.dz.floats() + co * L.dz.plane() + dz_at;
        int64_t q = 0;
        for (; q + 8 <= count; q += 8) {
            __m256 g[MR];
#pragma GCC unroll 4
            for (int r = 0; r < MR; ++r) g[r] = _mm256_loadu_ps(z + zr[r] + q);
#pragma GCC unroll 4
            for (int b = 0; b < NJ; ++b) {
                const __m256 xv = _mm256_loadu_ps(s + q + b);
#pragma GCC unroll 4
                for (int r = 0; r < MR; ++r) acc[r][b] = _mm256_fmadd_ps(g[r], xv, acc[r][b]);
            }
        }
        if (q < count) {  // the last count - q values (the other lanes' gradients read as zero)
            const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(count - q)), lane);
            __m256 g[MR];
#pragma GCC unroll 4
            for (int r = 0; r < MR; ++r) g[r] = _mm256_maskload_ps(z + zr[r] + q, m);
#pragma GCC unroll 4
            for (int b = 0; b < NJ; ++b) {
                const __m256 xv = _mm256_loadu_ps(s + q + b);
#pragma GCC unroll 4
                for (int r = 0; r < MR; ++r) acc[r][b] = _mm256_fmadd_ps(g[r], xv, acc[r][b]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int b = 0; b < NJ; ++b)
            if (r < mr) dw[(co + r) * K + (c * d.kh + i) * d.kw + j0 + b] += lane_total(acc[r][b]);
}

// The weight gradient of a chunk from the padded output gradient, 3 output
// channels and up to 3 taps of a kernel row at a time.
void weight_gradient_sums(const ConvDims &d, const BackwardLayout &L, int64_t nb, const float *xs, const float *dzs,
                          float *dw) {
    for (int64_t co = 0; co < d.cout; co += 3) {
        const int64_t mr = std::min<int64_t>(3, d.cout - co);
        for (int64_t c = 0; c < d.cin; ++c)
            for (int64_t i = 0; i < d.kh; ++i) {
                int64_t j = 0;
                for (; d.kw - j >= 3; j += 3) weight_tile_sums<3, 3>(d, L, nb, xs, dzs, co, mr, c, i, j, dw);
                if (d.kw - j == 2)
                    weight_tile_sums<3, 2>(d, L, nb, xs, dzs, co, mr, c, i, j, dw);
                else if (d.kw - j == 1)
                    weight_tile_sums<3, 1>(d, L, nb, xs, dzs, co, mr, c, i, j, dw);
            }
    }
}

}  // namespace

size_t conv_avx2_forward_floats(const ConvDims &d) { return size_t(forward_padded(d).floats() + slack_floats(d)); }

size_t conv_avx2_forward_lanes_floats(const ConvDims &d) {
    return size_t(lanes_floats(d.hout * forward_padded(d).pitch));
}

void conv_avx2_forward_lanes(const ConvDims &d, float *table) {
    const Padded p = forward_padded(d);
    fill_lanes(d.hout * p.pitch, p.pitch, d.wout, reinterpret_cast<Lanes *>(table));
}

int64_t conv_avx2_backward_chunk(const ConvDims &d, int64_t budget_floats) {
    return std::max<int64_t>(1, budget_floats / backward_layout(d).image);
}

size_t conv_avx2_backward_floats(const ConvDims &d, int64_t chunk) {
    const BackwardLayout L = backward_layout(d);
    return size_t(chunk * L.image + slack_floats(d) + lanes_floats(d.hin * L.x.pitch));
}

void conv_avx2_forward_begin(const ConvDims &d, float *workspace) {
    const int64_t floats = forward_padded(d).floats();
    std::fill(workspace + floats, workspace + floats + slack_floats(d), 0.0f);
}

void conv_avx2_forward_image(const ConvDims &d, const float *x, const float *w, const float *b, float *y, float *pre,
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

void conv_avx2_backward_images(const ConvDims &d, int64_t nb, const float *x, const float *w, const float *y,
                               const float *pre, float *dy, float *dw, float *db, float *dx, float *workspace) {
    const BackwardLayout L = backward_layout(d);
    const int64_t P = d.hout * d.wout, in_map = d.hin * d.win, K = d.cin * d.kh * d.kw;
    float *xs = workspace, *dzs = workspace + nb * L.x.floats(), *dzt = dzs + nb * L.dz.floats();
    float *slack = workspace + nb * L.image;
    Lanes *lanes = reinterpret_cast<Lanes *>(slack + slack_floats(d));
    std::fill(slack, slack + slack_floats(d), 0.0f);
    const float *v = pre ? pre : y;
    const bool few_taps = K <= kFewTaps;
    for (int64_t k = 0; k < nb; ++k) {
        float *g = dy + k * d.cout * P;
        derivative_span(d.act, g, v + k * d.cout * P, g, d.cout * P);
        if (d.bias)
            for (int64_t co = 0; co < d.cout; ++co) db[co] += sum_span(g + co * P, P);
        pad_maps(L.x, d.hin, d.win, x + k * d.cin * in_map, in_map, xs + k * L.x.floats());
        pad_maps(L.dz, d.hout, d.wout, g, P, dzs + k * L.dz.floats());
        if (!few_taps) transpose_gradient(d, L, g, dzt + k * P * L.lanes);
    }
    if (few_taps)
        weight_gradient_sums(d, L, nb, xs, dzs, dw);
    else
        weight_gradient(d, L, nb, xs, dzt, dw);
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

// Without x86-64 (or on Windows) the kernels are not built: the
// convolution's table never takes them, and the functions below are never
// called.
bool conv_avx2_built() { return false; }
size_t conv_avx2_forward_floats(const ConvDims &) { return 0; }
int64_t conv_avx2_backward_chunk(const ConvDims &, int64_t) { return 1; }
size_t conv_avx2_backward_floats(const ConvDims &, int64_t) { return 0; }
size_t conv_avx2_forward_lanes_floats(const ConvDims &) { return 0; }
void conv_avx2_forward_lanes(const ConvDims &, float *) {}
void conv_avx2_forward_begin(const ConvDims &, float *) {}
void conv_avx2_forward_image(const ConvDims &, const float *, const float *, const float *, float *, float *, int64_t,
                             int64_t, bool, const float *, float *) {}
void conv_avx2_backward_images(const ConvDims &, int64_t, const float *, const float *, const float *, const float *,
                               float *, float *, float *, float *, float *) {}

#endif

}  // namespace snn
