// The loss terms and their gradients (core/math.h): the elementwise losses
// and cross-entropy over rows of logits.
#pragma once

#include <math.h>
#include <stdint.h>

#include "core/math_numeric.h"

namespace snn {

// MSE term: loss += (y - t)^2 / count ; dL/dy = 2 (y - t) / count
SNN_HD float mse_term(float y, float t, float) { return (y - t) * (y - t); }
SNN_HD float mse_grad(float y, float t, float, float inv_count) { return 2.0f * (y - t) * inv_count; }

// Huber term (delta > 0), r = y - t: loss += 0.5 r^2 if |r| < delta, else
// delta (|r| - 0.5 delta), over count ; dL/dy = clamp(r, -delta, delta) / count
SNN_HD float huber_term(float y, float t, float delta) {
    const float r = y - t, a = fabsf(r);
    return a < delta ? 0.5f * r * r : delta * (a - 0.5f * delta);
}
SNN_HD float huber_grad(float y, float t, float delta, float inv_count) {
    const float r = y - t;
    return (r < -delta ? -delta : r > delta ? delta : r) * inv_count;
}

// Smooth L1 term (beta >= 0), r = y - t: loss += 0.5 r^2 / beta if |r| < beta,
// else |r| - 0.5 beta, over count (beta = 0: |r|) ; dL/dy = r / beta inside,
// else sign(r), over count, with sign(0) = 0 (PyTorch's)
SNN_HD float smooth_l1_term(float y, float t, float beta) {
    const float r = y - t, a = fabsf(r);
    return a < beta ? 0.5f * r * r / beta : a - 0.5f * beta;
}
SNN_HD float smooth_l1_grad(float y, float t, float beta, float inv_count) {
    const float r = y - t;
    const float g = r < -beta ? -1.0f : r > beta ? 1.0f : beta > 0.0f ? r / beta : 0.0f;
    return g * inv_count;
}

// Binary cross-entropy of a logit x against a target t, in the stable form
//   loss += max(x, 0) - x t + log1p(e^-|x|), over count
//   dL/dx = sigmoid(x) - t, over count
// where sigmoid(x) - t is (1 - t) - q for x >= 0 and q - t below, with
// q = e^-|x| / (1 + e^-|x|) = sigmoid(-|x|): nothing overflows for logits
// of +-1e4, and no 1 - q is rounded to 1, so a logit of 30 with target 1
// keeps its loss 9.4e-14 and its gradient -9.4e-14 in float precision.
SNN_HD float bce_term(float x, float t, float) { return fmaxf(x, 0.0f) - x * t + log1pf(expf(-fabsf(x))); }
SNN_HD float bce_grad(float x, float t, float, float inv_count) {
    const float e = expf(-fabsf(x)), q = e / (1.0f + e);
    return (x >= 0.0f ? (1.0f - t) - q : q - t) * inv_count;
}

// The elementwise losses above, each as one type whose term(y, t, p) and
// grad(y, t, p, inv_count) take the loss's parameter p (unused by MSE and
// BCE), so one loop per backend runs them all.
#define SNN_ELEMENTWISE_LOSS(name)                                                                 \
    struct name##_loss {                                                                           \
        SNN_HD static float term(float y, float t, float p) { return name##_term(y, t, p); }      \
        SNN_HD static float grad(float y, float t, float p, float inv_count) {                    \
            return name##_grad(y, t, p, inv_count);                                                \
        }                                                                                          \
    };
SNN_ELEMENTWISE_LOSS(mse)
SNN_ELEMENTWISE_LOSS(huber)
SNN_ELEMENTWISE_LOSS(smooth_l1)
SNN_ELEMENTWISE_LOSS(bce)
#undef SNN_ELEMENTWISE_LOSS

// Cross-entropy of one row of k logits, from its max m (at index top, the
// first one) and rest = sum over j != top of e^{y_j - m}: the sum of
// e^{y_j - m} is 1 + rest, so nothing is rounded before it is subtracted.
//   loss      = -log softmax(y)[label] = (m - y_label) + log1p(rest)
//   softmax_j = e^{y_j - m} / (1 + rest)
// Logits of 1e4 stay finite, and a loss of 6e-7 is not rounded to 0.
struct XentRow {
    float max, rest;
    int64_t top;
};

SNN_HD XentRow xent_row(const float *y, int64_t k) {
    XentRow r{y[0], 0.0f, 0};
    for (int64_t j = 1; j < k; ++j)
        if (y[j] > r.max) {
            r.max = y[j];
            r.top = j;
        }
    for (int64_t j = 0; j < k; ++j)
        if (j != r.top) r.rest += expf(y[j] - r.max);
    return r;
}

// Whether row i of a label loss over a sequence output ([batch][T] rows)
// counts: its label is not -1 and its step lies within the sample's length
// (lengths null: every step does).
SNN_HD bool label_row_counts(const int32_t *labels, const int32_t *lengths, int64_t steps, int64_t i) {
    return labels[i] >= 0 && (lengths == nullptr || i % steps < lengths[i / steps]);
}

SNN_HD float xent_row_loss(const XentRow &r, float y_label) {
    return (r.max - y_label) + log1pf(r.rest);
}

// dL/dy_j = (softmax(y)_j - [j == label]) / batch. For the label,
// softmax_j - 1 = -(sum of the other terms) / (1 + rest), whose numerator is
// rest itself when the label holds the max (no cancellation).
SNN_HD float xent_grad(const XentRow &r, float y, int64_t j, int64_t label, float inv_batch) {
    const float sum = 1.0f + r.rest;
    if (j != label) return expf(y - r.max) / sum * inv_batch;
    const float others = j == r.top ? r.rest : sum - expf(y - r.max);
    return -(others / sum) * inv_batch;
}

}  // namespace snn
