// Max and average pooling on the CPU (no padding; floor output sizes).
#include "cpu/cpu_backend.h"

namespace snn {

// y = max over the window; argmax keeps the winner's offset within its
// channel map (the first maximum, as PyTorch).
void CpuBackend::maxpool_forward(Stream *, void *, const PoolDims &d, int64_t n, const float *x,
                                 float *y, int32_t *argmax) {
    const int64_t in_map = d.hin * d.win, out_map = d.hout * d.wout;
    for (int64_t m = 0; m < n * d.c; ++m) {
        const float *map = x + m * in_map;
        float *out = y + m * out_map;
        int32_t *arg = argmax + m * out_map;
        for (int64_t oy = 0; oy < d.hout; ++oy)
            for (int64_t ox = 0; ox < d.wout; ++ox) {
                int64_t best = oy * d.sh * d.win + ox * d.sw;
                float v = map[best];
                for (int64_t i = 0; i < d.kh; ++i)
                    for (int64_t j = 0; j < d.kw; ++j) {
                        int64_t idx = (oy * d.sh + i) * d.win + ox * d.sw + j;
                        // NaN propagates, as in PyTorch
                        if (map[idx] > v || (map[idx] != map[idx] && v == v)) {
                            v = map[idx];
                            best = idx;
                        }
                    }
                out[oy * d.wout + ox] = v;
                arg[oy * d.wout + ox] = int32_t(best);
            }
    }
}

// dx[argmax] += dy ; zero elsewhere
void CpuBackend::maxpool_backward(Stream *, void *, const PoolDims &d, int64_t n, const float *,
                                  const float *, const float *dy, const int32_t *argmax,
                                  float *dx) {
    const int64_t in_map = d.hin * d.win, out_map = d.hout * d.wout;
    for (int64_t i = 0; i < n * d.c * in_map; ++i) dx[i] = 0.0f;
    for (int64_t m = 0; m < n * d.c; ++m) {
        float *map = dx + m * in_map;
        const float *g = dy + m * out_map;
        const int32_t *arg = argmax + m * out_map;
        for (int64_t p = 0; p < out_map; ++p) map[arg[p]] += g[p];
    }
}

// y = mean over the kh x kw window
void CpuBackend::avgpool_forward(Stream *, void *, const PoolDims &d, int64_t n, const float *x,
                                 float *y) {
    const int64_t in_map = d.hin * d.win, out_map = d.hout * d.wout;
    const float scale = 1.0f / float(d.kh * d.kw);
    for (int64_t m = 0; m < n * d.c; ++m) {
        const float *map = x + m * in_map;
        float *out = y + m * out_map;
        for (int64_t oy = 0; oy < d.hout; ++oy)
            for (int64_t ox = 0; ox < d.wout; ++ox) {
                float s = 0.0f;
                for (int64_t i = 0; i < d.kh; ++i)
                    for (int64_t j = 0; j < d.kw; ++j) s += map[(oy * d.sh + i) * d.win + ox * d.sw + j];
                out[oy * d.wout + ox] = s * scale;
            }
    }
}

// dx[window] += dy / (kh kw)
void CpuBackend::avgpool_backward(Stream *, void *, const PoolDims &d, int64_t n, const float *dy,
                                  float *dx) {
    const int64_t in_map = d.hin * d.win, out_map = d.hout * d.wout;
    const float scale = 1.0f / float(d.kh * d.kw);
    for (int64_t i = 0; i < n * d.c * in_map; ++i) dx[i] = 0.0f;
    for (int64_t m = 0; m < n * d.c; ++m) {
        float *map = dx + m * in_map;
        const float *g = dy + m * out_map;
        for (int64_t oy = 0; oy < d.hout; ++oy)
            for (int64_t ox = 0; ox < d.wout; ++ox) {
                float v = g[oy * d.wout + ox] * scale;
                for (int64_t i = 0; i < d.kh; ++i)
                    for (int64_t j = 0; j < d.kw; ++j) map[(oy * d.sh + i) * d.win + ox * d.sw + j] += v;
            }
    }
}

}  // namespace snn
