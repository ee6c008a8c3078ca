// Losses on the CPU: loops over engine/math.h.
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

// L = mean over rows of -log softmax(y)[label] ; dy = (softmax(y) - onehot) / n
void CpuBackend::xent_loss(Stream *, int64_t n, int64_t k, const float *y, const int32_t *labels,
                           float *dy, float *loss) {
    const float inv = 1.0f / float(n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float *row = y + i * k;
        const XentRow r = xent_row(row, k);
        sum += double(xent_row_loss(r, row[labels[i]]));
        for (int64_t j = 0; j < k; ++j) dy[i * k + j] = xent_grad(r, row[j], j, labels[i], inv);
    }
    *loss = float(sum / double(n));
}

}  // namespace snn
