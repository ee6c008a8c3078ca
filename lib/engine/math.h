// Per-element math shared by every backend: activations and their
// derivatives, loss terms and optimiser update rules. The CPU backend calls
// these from plain loops; the CUDA backend from kernels (SNN_HD expands to
// __host__ __device__ under nvcc), so the CPU tests check the GPU's math.
#pragma once

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define SNN_HD __host__ __device__ __forceinline__
#else
#define SNN_HD inline
#endif

namespace snn {

enum class Act : int32_t { identity = 0, relu = 1, leaky_relu = 2, tanh = 3, sigmoid = 4 };

constexpr float kLeakySlope = 0.01f;

// y = act(z)
SNN_HD float activate(Act a, float z) {
    switch (a) {
        case Act::relu: return z > 0.0f ? z : 0.0f;
        case Act::leaky_relu: return z > 0.0f ? z : kLeakySlope * z;
        case Act::tanh: return tanhf(z);
        case Act::sigmoid: return 1.0f / (1.0f + expf(-z));
        default: return z;
    }
}

// d act / dz written in terms of the output y = act(z) (every activation here
// is monotonic, so y determines the derivative and z need not be stored).
SNN_HD float activation_derivative(Act a, float y) {
    switch (a) {
        case Act::relu: return y > 0.0f ? 1.0f : 0.0f;
        case Act::leaky_relu: return y > 0.0f ? 1.0f : kLeakySlope;
        case Act::tanh: return 1.0f - y * y;
        case Act::sigmoid: return y * (1.0f - y);
        default: return 1.0f;
    }
}

// MSE term: loss += (y - t)^2 / count ; dL/dy = 2 (y - t) / count
SNN_HD float mse_term(float y, float t) { return (y - t) * (y - t); }
SNN_HD float mse_grad(float y, float t, float inv_count) { return 2.0f * (y - t) * inv_count; }

// Cross-entropy of one row of logits: log-sum-exp with the max subtracted,
// so logits of 1e4 stay finite. Returns -log softmax(y)[label].
SNN_HD float logsumexp_row(const float *y, int64_t k, float *max_out) {
    float m = y[0];
    for (int64_t j = 1; j < k; ++j) m = y[j] > m ? y[j] : m;
    float s = 0.0f;
    for (int64_t j = 0; j < k; ++j) s += expf(y[j] - m);
    *max_out = m;
    return m + logf(s);
}
// dL/dy_j = (softmax(y)_j - [j == label]) / batch
SNN_HD float xent_grad(float y, float lse, int is_label, float inv_batch) {
    return (expf(y - lse) - (is_label ? 1.0f : 0.0f)) * inv_batch;
}

// Hyperparameters and step-dependent factors of one optimiser step, computed
// once on the host per step.
struct OptStep {
    float lr, momentum, beta1, beta2, eps, weight_decay, alpha;
    float bias_correction1, bias_correction2;  // 1 - beta^t (Adam)
    int32_t nesterov, first_step;
};

// SGD with momentum (PyTorch's form): b = mu b + g ; p -= lr (g + mu b) if
// Nesterov else lr b. On the first step b = g.
SNN_HD void sgd_update(const OptStep &s, float *p, float g, float *b) {
    g += s.weight_decay * *p;
    if (s.momentum != 0.0f) {
        float buf = s.first_step ? g : s.momentum * *b + g;
        *b = buf;
        g = s.nesterov ? g + s.momentum * buf : buf;
    }
    *p -= s.lr * g;
}

// Adam (L2 decay folded into g) and AdamW (decoupled decay p -= lr wd p).
SNN_HD void adam_update(const OptStep &s, int decoupled, float *p, float g, float *m, float *v) {
    if (decoupled) {
        *p -= s.lr * s.weight_decay * *p;
    } else {
        g += s.weight_decay * *p;
    }
    *m = s.beta1 * *m + (1.0f - s.beta1) * g;
    *v = s.beta2 * *v + (1.0f - s.beta2) * g * g;
    float mhat = *m / s.bias_correction1;
    float vhat = *v / s.bias_correction2;
    *p -= s.lr * mhat / (sqrtf(vhat) + s.eps);
}

// RMSProp (PyTorch's form): v = a v + (1 - a) g^2 ; p -= lr g / (sqrt(v) + eps)
SNN_HD void rmsprop_update(const OptStep &s, float *p, float g, float *v) {
    g += s.weight_decay * *p;
    *v = s.alpha * *v + (1.0f - s.alpha) * g * g;
    *p -= s.lr * g / (sqrtf(*v) + s.eps);
}

}  // namespace snn
