// Direct convolution for few taps (see cpu/conv_direct.h), written with
// vectors of 8 floats. This file alone is compiled with -ffp-contract=fast
// (meson.build), so the AVX2 build fuses each multiply-add into one FMA; the
// baseline build multiplies and adds. Sums run in a fixed order for a fixed
// image: results are deterministic on a given processor.
#include "cpu/conv_direct.h"

#include <algorithm>

#include "cpu/activation.h"
#include "cpu/multiversion.h"
#include "cpu/vec8.h"

namespace snn {
namespace {

constexpr int64_t W = kDirectWidth;

static_assert(W == 16, "two vectors per row of columns");
typedef v8f v8;

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// xp[c][r][col] = x[c][r - ph][col - pw], zero outside the image.
void pad_image(const ConvDims &d, const DirectLayout &L, const float *x, float *xp) {
    std::fill(xp, xp + d.cin * L.hp * L.wp, 0.0f);
    for (int64_t c = 0; c < d.cin; ++c)
        for (int64_t r = 0; r < d.hin; ++r)
            std::copy(x + (c * d.hin + r) * d.win, x + (c * d.hin + r + 1) * d.win,
                      xp + (c * L.hp + r + d.ph) * L.wp + d.pw);
}

// Writes the first n (at most 16) columns of a, b to dst.
__attribute__((always_inline)) inline void store_row(float *dst, int64_t n, v8 a, v8 b) {
    if (n == W) {
        SNN_STORE8(dst, a);
        SNN_STORE8(dst + 8, b);
        return;
    }
    for (int64_t l = 0; l < n; ++l) dst[l] = l < 8 ? a[l] : b[l - 8];
}

// Four output channels from co0 (named accumulators, so they stay in
// registers), every output row, 16 columns at a time.
__attribute__((always_inline)) inline void forward_block4(const ConvDims &d, const DirectLayout &L, const float *xp,
                                                         const float *w, const float *b, int64_t co0, float *z) {
    const int64_t K = d.cin * d.kh * d.kw, P = d.hout * d.wout;
    const float *w0 = w + co0 * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
    for (int64_t oy = 0; oy < d.hout; ++oy)
        for (int64_t ox0 = 0; ox0 < d.wout; ox0 += W) {
            v8 a0 = SNN_SPLAT8(d.bias ? b[co0] : 0.0f), a1 = a0;
            v8 b0 = SNN_SPLAT8(d.bias ? b[co0 + 1] : 0.0f), b1 = b0;
            v8 c0 = SNN_SPLAT8(d.bias ? b[co0 + 2] : 0.0f), c1 = c0;
            v8 e0 = SNN_SPLAT8(d.bias ? b[co0 + 3] : 0.0f), e1 = e0;
            for (int64_t c = 0; c < d.cin; ++c)
                for (int64_t i = 0; i < d.kh; ++i) {
                    const float *xr = xp + (c * L.hp + oy + i) * L.wp + ox0;
                    const int64_t t0 = (c * d.kh + i) * d.kw;
                    for (int64_t j = 0; j < d.kw; ++j) {
                        const v8 x0 = SNN_LOAD8(xr + j), x1 = SNN_LOAD8(xr + j + 8);
                        const v8 v0 = SNN_SPLAT8(w0[t0 + j]), v1 = SNN_SPLAT8(w1[t0 + j]);
                        const v8 v2 = SNN_SPLAT8(w2[t0 + j]), v3 = SNN_SPLAT8(w3[t0 + j]);
                        a0 += v0 * x0;
                        a1 += v0 * x1;
                        b0 += v1 * x0;
                        b1 += v1 * x1;
                        c0 += v2 * x0;
                        c1 += v2 * x1;
                        e0 += v3 * x0;
                        e1 += v3 * x1;
                    }
                }
            const int64_t n = std::min(W, d.wout - ox0);
            float *dst = z + co0 * P + oy * d.wout + ox0;
            store_row(dst, n, a0, a1);
            store_row(dst + P, n, b0, b1);
            store_row(dst + 2 * P, n, c0, c1);
            store_row(dst + 3 * P, n, e0, e1);
        }
}

// One output channel, as forward_block4.
__attribute__((always_inline)) inline void forward_block1(const ConvDims &d, const DirectLayout &L, const float *xp,
                                                         const float *w, const float *b, int64_t co, float *z) {
    const int64_t K = d.cin * d.kh * d.kw, P = d.hout * d.wout;
    const float *w0 = w + co * K;
    for (int64_t oy = 0; oy < d.hout; ++oy)
        for (int64_t ox0 = 0; ox0 < d.wout; ox0 += W) {
            v8 a0 = SNN_SPLAT8(d.bias ? b[co] : 0.0f), a1 = a0;
            for (int64_t c = 0; c < d.cin; ++c)
                for (int64_t i = 0; i < d.kh; ++i) {
                    const float *xr = xp + (c * L.hp + oy + i) * L.wp + ox0;
                    const int64_t t0 = (c * d.kh + i) * d.kw;
                    for (int64_t j = 0; j < d.kw; ++j) {
                        const v8 v0 = SNN_SPLAT8(w0[t0 + j]);
                        a0 += v0 * SNN_LOAD8(xr + j);
                        a1 += v0 * SNN_LOAD8(xr + j + 8);
                    }
                }
            store_row(z + co * P + oy * d.wout + ox0, std::min(W, d.wout - ox0), a0, a1);
        }
}

// dw[co][c][i][j0 + t] += sum over rows and columns of dz (x) x shifted, for
// JB neighbouring taps j0.. at once (one load of dz serves them all).
template <int JB>
__attribute__((always_inline)) inline void weight_taps(const ConvDims &d, const DirectLayout &L, const float *xp, const float *dzp, int64_t co,
                        int64_t c, int64_t i, int64_t j0, float *dw) {
    const int64_t K = d.cin * d.kh * d.kw;
    v8 acc[JB][2];
    for (int t = 0; t < JB; ++t) acc[t][0] = acc[t][1] = SNN_SPLAT8(0.0f);
    for (int64_t oy = 0; oy < d.hout; ++oy) {
        const float *g = dzp + (co * d.hout + oy) * L.wq;
        const float *xr = xp + (c * L.hp + oy + i) * L.wp + j0;
        for (int64_t ox0 = 0; ox0 < L.wq; ox0 += W) {
            const v8 g0 = SNN_LOAD8(g + ox0), g1 = SNN_LOAD8(g + ox0 + 8);
            for (int t = 0; t < JB; ++t) {
                acc[t][0] += g0 * SNN_LOAD8(xr + ox0 + t);
                acc[t][1] += g1 * SNN_LOAD8(xr + ox0 + t + 8);
            }
        }
    }
    for (int t = 0; t < JB; ++t) dw[co * K + (c * d.kh + i) * d.kw + j0 + t] += SNN_SUM8(acc[t][0] + acc[t][1]);
}

}  // namespace

bool conv_direct_eligible(const ConvDims &d) {
    return d.sh == 1 && d.sw == 1 && d.cin * d.kh * d.kw <= kDirectMaxTaps && d.hout > 0 && d.wout > 0;
}

DirectLayout conv_direct_layout(const ConvDims &d) {
    const int64_t wq = round_up(d.wout, W);
    return {d.hin + 2 * d.ph, std::max(wq + d.kw - 1, d.win + 2 * d.pw), wq};
}

size_t conv_direct_forward_floats(const ConvDims &d) {
    const DirectLayout L = conv_direct_layout(d);
    return size_t(d.cin * L.hp * L.wp);
}

size_t conv_direct_backward_floats(const ConvDims &d) {
    const DirectLayout L = conv_direct_layout(d);
    return size_t(2 * d.cin * L.hp * L.wp + d.cout * d.hout * L.wq);
}

SNN_MULTIVERSION
void conv_direct_forward_image(const ConvDims &d, const float *x, const float *w, const float *b, float *y,
                               float *pre, float *workspace) {
    const DirectLayout L = conv_direct_layout(d);
    const int64_t P = d.hout * d.wout;
    pad_image(d, L, x, workspace);
    float *z = pre ? pre : y;
    int64_t co = 0;
    for (; co + 4 <= d.cout; co += 4) forward_block4(d, L, workspace, w, b, co, z);
    for (; co < d.cout; ++co) forward_block1(d, L, workspace, w, b, co, z);
    if (pre)
        activate_copy(d.act, pre, y, d.cout * P);
    else
        activate_inplace(d.act, y, d.cout * P);
}

SNN_MULTIVERSION
void conv_direct_backward_image(const ConvDims &d, const float *x, const float *w, const float *y,
                                const float *pre, const float *dy, float *dw, float *db, float *dx,
                                float *workspace) {
    const DirectLayout L = conv_direct_layout(d);
    const int64_t P = d.hout * d.wout, K = d.cin * d.kh * d.kw;
    float *xp = workspace, *dxp = xp + d.cin * L.hp * L.wp, *dzp = dxp + d.cin * L.hp * L.wp;
    pad_image(d, L, x, xp);
    // dz, each row padded with zeros to wq columns: a channel's P values
    // are written at the start of its padded map, then its rows are moved
    // out to their places, the last first (wq >= wout, so none is
    // overwritten before it has moved).
    const float *v = pre ? pre : y;
    for (int64_t co = 0; co < d.cout; ++co) {
        float *map = dzp + co * d.hout * L.wq;
        derivative_span(d.act, dy + co * P, v + co * P, map, P);
        for (int64_t oy = d.hout - 1; oy >= 0; --oy) {
            float *row = map + oy * L.wq;
            if (L.wq != d.wout) std::copy_backward(map + oy * d.wout, map + (oy + 1) * d.wout, row + d.wout);
            std::fill(row + d.wout, row + L.wq, 0.0f);
        }
    }
    if (d.bias)
        for (int64_t co = 0; co < d.cout; ++co) db[co] += sum_span(dzp + co * d.hout * L.wq, d.hout * L.wq);
    for (int64_t co = 0; co < d.cout; ++co)
        for (int64_t c = 0; c < d.cin; ++c)
            for (int64_t i = 0; i < d.kh; ++i) {
                int64_t j = 0;
                if (d.kw == 3) {
                    weight_taps<3>(d, L, xp, dzp, co, c, i, 0, dw);
                    j = 3;
                } else if (d.kw == 5) {
                    weight_taps<5>(d, L, xp, dzp, co, c, i, 0, dw);
                    j = 5;
                }
                for (; j < d.kw; ++j) weight_taps<1>(d, L, xp, dzp, co, c, i, j, dw);
            }
    if (!dx) return;
    // dxp[c][oy + i][ox + j] += w dz[co][oy][ox], then the image's interior
    std::fill(dxp, dxp + d.cin * L.hp * L.wp, 0.0f);
    for (int64_t co = 0; co < d.cout; ++co)
        for (int64_t oy = 0; oy < d.hout; ++oy)
            for (int64_t ox0 = 0; ox0 < L.wq; ox0 += W) {
                const float *g = dzp + (co * d.hout + oy) * L.wq + ox0;
                const v8 g0 = SNN_LOAD8(g), g1 = SNN_LOAD8(g + 8);
                for (int64_t c = 0; c < d.cin; ++c)
                    for (int64_t i = 0; i < d.kh; ++i) {
                        float *dr = dxp + (c * L.hp + oy + i) * L.wp + ox0;
                        const float *wr = w + co * K + (c * d.kh + i) * d.kw;
                        for (int64_t j = 0; j < d.kw; ++j) {
                            const v8 wv = SNN_SPLAT8(wr[j]);
                            SNN_STORE8(dr + j, SNN_LOAD8(dr + j) + wv * g0);
                            SNN_STORE8(dr + j + 8, SNN_LOAD8(dr + j + 8) + wv * g1);
                        }
                    }
            }
    for (int64_t c = 0; c < d.cin; ++c)
        for (int64_t r = 0; r < d.hin; ++r) {
            const float *src = dxp + (c * L.hp + r + d.ph) * L.wp + d.pw;
            std::copy(src, src + d.win, dx + (c * d.hin + r) * d.win);
        }
}

}  // namespace snn
