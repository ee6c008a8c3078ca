// Losses on the CPU: loops over engine/math.h, one function per line of
// SNN_LOSS_LIST (engine/losses.h).
#include "cpu/cpu_backend.h"

namespace snn {

namespace {

// L = sum (y - t)^2 / (n k) ; dy = 2 (y - t) / (n k)
void loss_mse(const LossArgs &a) {
    const int64_t count = a.n * a.k;
    const float inv = 1.0f / float(count);
    double sum = 0.0;
    for (int64_t i = 0; i < count; ++i) {
        sum += mse_term(a.y[i], a.targets[i]);
        a.dy[i] = mse_grad(a.y[i], a.targets[i], inv);
    }
    *a.loss = float(sum / double(count));
}

// L = mean over rows of -log softmax(y)[label] ; dy = (softmax(y) - onehot) / n
void loss_logit_crossentropy(const LossArgs &a) {
    const int64_t n = a.n, k = a.k;
    const float inv = 1.0f / float(n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float *row = a.y + i * k;
        const int32_t label = a.labels[i];
        const XentRow r = xent_row(row, k);
        sum += double(xent_row_loss(r, row[label]));
        for (int64_t j = 0; j < k; ++j) a.dy[i * k + j] = xent_grad(r, row[j], j, label, inv);
    }
    *a.loss = float(sum / double(n));
}

// L = sum huber(y - t; delta) / (n k) ; dy = clamp(y - t, -delta, delta) / (n k)
void loss_huber(const LossArgs &a) {
    const int64_t count = a.n * a.k;
    const float inv = 1.0f / float(count);
    double sum = 0.0;
    for (int64_t i = 0; i < count; ++i) {
        sum += huber_term(a.y[i], a.targets[i], a.param);
        a.dy[i] = huber_grad(a.y[i], a.targets[i], a.param, inv);
    }
    *a.loss = float(sum / double(count));
}

// L = sum smooth_l1(y - t; beta) / (n k) ; dy = clamp((y - t) / beta, -1, 1) / (n k)
void loss_smooth_l1(const LossArgs &a) {
    const int64_t count = a.n * a.k;
    const float inv = 1.0f / float(count);
    double sum = 0.0;
    for (int64_t i = 0; i < count; ++i) {
        sum += smooth_l1_term(a.y[i], a.targets[i], a.param);
        a.dy[i] = smooth_l1_grad(a.y[i], a.targets[i], a.param, inv);
    }
    *a.loss = float(sum / double(count));
}

// L = sum bce(y, t) / (n k) over logits y ; dy = (sigmoid(y) - t) / (n k)
void loss_bce_with_logits(const LossArgs &a) {
    const int64_t count = a.n * a.k;
    const float inv = 1.0f / float(count);
    double sum = 0.0;
    for (int64_t i = 0; i < count; ++i) {
        sum += bce_term(a.y[i], a.targets[i]);
        a.dy[i] = bce_grad(a.y[i], a.targets[i], inv);
    }
    *a.loss = float(sum / double(count));
}

}  // namespace

LossKernel CpuBackend::loss_kernel(LossKind kind) const {
    static const LossKernel table[] = {
#define SNN_CPU_LOSS_ENTRY(name, id) &loss_##name,
        SNN_LOSS_LIST(SNN_CPU_LOSS_ENTRY)
#undef SNN_CPU_LOSS_ENTRY
    };
    return table[size_t(kind)];
}

}  // namespace snn
