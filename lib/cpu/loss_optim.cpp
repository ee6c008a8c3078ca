// Losses and optimiser updates on the CPU: loops over engine/math.h.
#include "cpu/cpu_backend.h"

namespace snn {

// L = sum (y - t)^2 / (n k) ; dy = 2 (y - t) / (n k)
void CpuBackend::mse_loss(Stream *, int64_t n, int64_t k, const float *y, const float *t,
                          float *dy, float *loss) {
    const int64_t count = n * k;
    const float inv = 1.0f / float(count);
    double sum = 0.0;
    for (int64_t i = 0; i < count; ++i) {
        sum += mse_term(y[i], t[i]);
        dy[i] = mse_grad(y[i], t[i], inv);
    }
    *loss = float(sum / double(count));
}

// L = mean over rows of logsumexp(y) - y[label] ; dy = (softmax(y) - onehot) / n
void CpuBackend::xent_loss(Stream *, int64_t n, int64_t k, const float *y, const int32_t *labels,
                           float *dy, float *loss) {
    const float inv = 1.0f / float(n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float *row = y + i * k;
        float m;
        float lse = logsumexp_row(row, k, &m);
        sum += double(lse - row[labels[i]]);
        for (int64_t j = 0; j < k; ++j) dy[i * k + j] = xent_grad(row[j], lse, j == labels[i], inv);
    }
    *loss = float(sum / double(n));
}

// __restrict: parameters, gradient and moments never overlap, so the loops
// vectorise.
void CpuBackend::optimiser_step(Stream *, OptKind kind, const OptStep &step, size_t count,
                                float *__restrict p, const float *__restrict g,
                                float *__restrict m, float *__restrict v) {
    const OptStep s = step;
    switch (kind) {
        case OptKind::sgd:
            for (size_t i = 0; i < count; ++i) sgd_update(s, p + i, g[i], m + i);
            break;
        case OptKind::adam:
        case OptKind::adamw: {
            const int decoupled = kind == OptKind::adamw;
            for (size_t i = 0; i < count; ++i) adam_update(s, decoupled, p + i, g[i], m + i, v + i);
            break;
        }
        case OptKind::rmsprop:
            for (size_t i = 0; i < count; ++i) rmsprop_update(s, p + i, g[i], v + i);
            break;
    }
}

}  // namespace snn
