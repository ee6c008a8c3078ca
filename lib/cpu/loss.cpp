// Losses on the CPU: loops over core/math.h, one function per line of
// SNN_LOSS_LIST (core/losses.h).
#include "cpu/cpu_backend.h"

namespace snn {

namespace {

// An elementwise loss L (math.h's <name>_loss) over all count = n*k pairs:
// loss = sum L::term(y, t, p) / count (summed in double) ; dy = L::grad(y, t, p, 1 / count)
template <class L>
void elementwise_loss(const LossArgs &a) {
    const int64_t count = a.n * a.k;
    const float inv = 1.0f / float(count);
    double sum = 0.0;
    for (int64_t i = 0; i < count; ++i) {
        sum += L::term(a.y[i], a.targets[i], a.param);
        a.dy[i] = L::grad(a.y[i], a.targets[i], a.param, inv);
    }
    *a.loss = float(sum / double(count));
}

// (y - t)^2 ; dy = 2 (y - t) / (n k)
void loss_mse(const LossArgs &a) { elementwise_loss<mse_loss>(a); }

// L = mean over the m rows that count of -log softmax(y)[label] ;
// dy = (softmax(y) - onehot) / m, 0 on the other rows. Every row counts but
// a sequence's ignored and padded steps (label_row_counts).
void loss_logit_crossentropy(const LossArgs &a) {
    const int64_t n = a.n, k = a.k;
    int64_t m = n;
    if (a.sequence) {
        m = 0;
        for (int64_t i = 0; i < n; ++i) m += label_row_counts(a.labels, a.lengths, a.steps, i);
    }
    const float inv = m ? 1.0f / float(m) : 0.0f;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float *row = a.y + i * k;
        float *dy = a.dy + i * k;
        if (a.sequence && !label_row_counts(a.labels, a.lengths, a.steps, i)) {
            for (int64_t j = 0; j < k; ++j) dy[j] = 0.0f;
            continue;
        }
        const int32_t label = a.labels[i];
        const XentRow r = xent_row(row, k);
        sum += double(xent_row_loss(r, row[label]));
        for (int64_t j = 0; j < k; ++j) dy[j] = xent_grad(r, row[j], j, label, inv);
    }
    *a.loss = m ? float(sum / double(m)) : 0.0f;
}

// huber(y - t; delta) ; dy = clamp(y - t, -delta, delta) / (n k)
void loss_huber(const LossArgs &a) { elementwise_loss<huber_loss>(a); }

// smooth_l1(y - t; beta) ; dy = clamp((y - t) / beta, -1, 1) / (n k)
void loss_smooth_l1(const LossArgs &a) { elementwise_loss<smooth_l1_loss>(a); }

// bce(y, t) of logits y ; dy = (sigmoid(y) - t) / (n k)
void loss_bce_with_logits(const LossArgs &a) { elementwise_loss<bce_loss>(a); }

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
