// The optimisers' update rules and gradient-norm clipping (core/math.h).
#pragma once

#include <math.h>
#include <stdint.h>

#include "core/math_numeric.h"

namespace snn {

// Hyperparameters and step-dependent factors of one optimiser step, computed
// once on the host per step: each factor is computed in double from the
// double hyperparameters and rounded once (1 - 0.99999 in float would be
// off by 7e-4).
struct OptStep {
    float lr, momentum, eps, weight_decay;
    float lr_weight_decay;                     // lr * weight_decay (AdamW, Lion)
    float one_minus_beta1, one_minus_beta2;    // Adam, Lion
    float one_minus_alpha;                     // RMSProp
    float one_minus_dampening;                 // SGD
    double max_grad_norm;                      // clipping by the gradient norm, 0 = off
    float bias_correction1, bias_correction2;  // 1 - beta^t (Adam)
    int32_t nesterov, first_step;
};

// torch.nn.utils.clip_grad_norm_'s factor of the gradient, from its L2
// norm: min(1, max_norm / (norm + 1e-6)). A NaN norm gives NaN and an
// infinite one 0, as PyTorch's (error_if_nonfinite=False) do.
SNN_HD float clip_coefficient(double max_norm, double norm) {
    const double c = max_norm / (norm + 1e-6);
    return c >= 1.0 ? 1.0f : (float)c;
}

// Every update has the signature of its backends' loops:
//   <name>_update(step, &parameter, gradient, &m, &v)
// with m and v the element's state; an update touches only the state its
// descriptor keeps (core/optimisers.h), so the others may be null.

// SGD with momentum (PyTorch's form): b = mu b + (1 - dampening) g ;
// p -= lr (g + mu b) if Nesterov else lr b. On the first step b = g.
SNN_HD void sgd_update(const OptStep &s, float *p, float g, float *b, float *) {
    g += s.weight_decay * *p;
    if (s.momentum != 0.0f) {
        float buf = s.first_step ? g : s.momentum * *b + s.one_minus_dampening * g;
        *b = buf;
        g = s.nesterov ? g + s.momentum * buf : buf;
    }
    *p -= s.lr * g;
}

// Moving averages are written a += (1 - beta) (x - a), which equals
// beta a + (1 - beta) x but needs only the complement: its fixed point is x
// exactly, whatever the rounding of beta.

// Adam (L2 decay folded into g) and AdamW (decoupled decay p -= lr wd p).
SNN_HD void adam_rule(const OptStep &s, bool decoupled, float *p, float g, float *m, float *v) {
    if (decoupled) {
        *p -= s.lr_weight_decay * *p;
    } else {
        g += s.weight_decay * *p;
    }
    *m += s.one_minus_beta1 * (g - *m);
    *v += s.one_minus_beta2 * (g * g - *v);
    float mhat = *m / s.bias_correction1;
    float vhat = *v / s.bias_correction2;
    *p -= s.lr * mhat / (sqrtf(vhat) + s.eps);
}

SNN_HD void adam_update(const OptStep &s, float *p, float g, float *m, float *v) {
    adam_rule(s, false, p, g, m, v);
}

SNN_HD void adamw_update(const OptStep &s, float *p, float g, float *m, float *v) {
    adam_rule(s, true, p, g, m, v);
}

// Lion (Chen et al. 2023; the lion-pytorch package's form), decoupled decay:
// c = b1 m + (1 - b1) g ; p = p (1 - lr wd) - lr sign(c) ; m = b2 m + (1 - b2) g
// with sign(0) = 0 (and NaN kept).
SNN_HD void lion_update(const OptStep &s, float *p, float g, float *m, float *) {
    *p -= s.lr_weight_decay * *p;
    const float c = *m + s.one_minus_beta1 * (g - *m);
    *p -= s.lr * (c > 0.0f ? 1.0f : c < 0.0f ? -1.0f : c);
    *m += s.one_minus_beta2 * (g - *m);
}

// RMSProp (PyTorch's form): v = a v + (1 - a) g^2 ; p -= lr g / (sqrt(v) + eps)
SNN_HD void rmsprop_update(const OptStep &s, float *p, float g, float *, float *v) {
    g += s.weight_decay * *p;
    *v += s.one_minus_alpha * (g * g - *v);
    *p -= s.lr * g / (sqrtf(*v) + s.eps);
}

}  // namespace snn
