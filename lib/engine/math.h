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

// 2^n for an integer n in [-126, 127], built from the exponent bits.
SNN_HD float pow2i(int n) {
    int bits = (n + 127) << 23;
#if defined(__CUDA_ARCH__)
    return __int_as_float(bits);
#else
    float f;
    __builtin_memcpy(&f, &bits, sizeof f);
    return f;
#endif
}

// e^x to within 2 ulp, branch-free so loops over it vectorise (Cephes'
// method): e^x = 2^n e^r with n = round(x / ln 2), |r| <= ln(2)/2, and e^r
// by a degree-6 polynomial.
SNN_HD float exp_approx(float x) {
    x = x > 88.3762626647949f ? 88.3762626647949f : x;
    x = x < -87.3365447505531f ? -87.3365447505531f : x;
    float t = x * 1.44269504088896341f;
    int n = int(t + (t >= 0.0f ? 0.5f : -0.5f));
    float fn = float(n);
    float r = x - fn * 0.693359375f;  // ln 2 split in two for exact reduction
    r = r - fn * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    // n can reach 128 at the top of the range: split the scaling in two.
    int half = n / 2;
    return p * pow2i(half) * pow2i(n - half);
}

// tanh as a rational function p(x)/q(x) (odd degree 13 over even degree 6)
// on [-7.9053, 7.9053], where tanh is 1 to float precision beyond; within
// 4e-7 relative of tanh everywhere, exact in sign and near zero. One
// division, no branches: loops over it vectorise.
SNN_HD float tanh_approx(float x) {
    const float clamp = 7.90531110763549805f;
    x = x > clamp ? clamp : (x < -clamp ? -clamp : x);
    const float x2 = x * x;
    float p = -2.76076847742355e-16f;
    p = p * x2 + 2.00018790482477e-13f;
    p = p * x2 + -8.60467152213735e-11f;
    p = p * x2 + 5.12229709037114e-08f;
    p = p * x2 + 1.48572235717979e-05f;
    p = p * x2 + 6.37261928875436e-04f;
    p = p * x2 + 4.89352455891786e-03f;
    p = p * x;
    float q = 1.19825839466702e-06f;
    q = q * x2 + 1.18534705686654e-04f;
    q = q * x2 + 2.26843463243900e-03f;
    q = q * x2 + 4.89352518554385e-03f;
    return p / q;
}

SNN_HD float sigmoid_approx(float x) { return 1.0f / (1.0f + exp_approx(-x)); }

// y = act(z)
SNN_HD float activate(Act a, float z) {
    switch (a) {
        case Act::relu: return z > 0.0f ? z : 0.0f;
        case Act::leaky_relu: return z > 0.0f ? z : kLeakySlope * z;
        case Act::tanh: return tanh_approx(z);
        case Act::sigmoid: return sigmoid_approx(z);
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
