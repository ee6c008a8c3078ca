// The activations and their derivatives (core/math.h): the list of
// activations, GELU, SiLU, activate() and activation_derivative().
#pragma once

#include <math.h>
#include <stdint.h>

#include "core/math_numeric.h"

namespace snn {

// Every activation, in the order of its number (which model files and the
// spec never store: they store the name). Adding one: a line here, its
// function in activate(), its derivative in activation_derivative().
#define SNN_ACT_LIST(X) X(identity) X(relu) X(leaky_relu) X(tanh) X(sigmoid) X(gelu) X(silu)

enum class Act : int32_t {
#define SNN_ACT_ENUM(name) name,
    SNN_ACT_LIST(SNN_ACT_ENUM)
#undef SNN_ACT_ENUM
};

// Activations whose derivative needs the input z (they are not monotonic, so
// the output does not determine it); the others need only the output y.
SNN_HD bool act_uses_input(Act a) { return a == Act::gelu || a == Act::silu; }

constexpr float kLeakySlope = 0.01f;

// The standard normal distribution's lower tail for a = |z| >= 0, written
// Phi(-a) = e^{-a^2/2} R(a) (erfc(a / sqrt 2) / 2 without the rounding of
// a / sqrt 2): R is smooth and slowly varying (1/2 at 0, about
// 1 / (a sqrt(2 pi)) for large a), approximated as p(t) / (a + 0.8) with
// t = (a - 3) / (a + 3) in [-1, 1) and p a degree-10 fit of relative error
// 1e-8 on a <= 15 (p runs from 0.4 to 0.4: a + 0.8 matches both ends, so
// Horner's rounding errors stay small). a^2 is split into hi + lo exactly
// (an fma gives lo), so
// e^{-a^2/2} = e^{-hi/2} (1 - lo/2) keeps the tail's relative accuracy down
// to where the results underflow (a = 14.4, and 14.6 for gelu'; beyond, a
// is clamped to 15, where they are 0); e^{-hi/2} is kept scaled by 2^64 so that it stays
// normal where it is tiny (a > 13.2) but gelu' is not. Branch-free
// (exp_scaled, +, *, fma and two divisions), so loops over it vectorise.
struct NormalTail {
    float a;        // |z| clamped to 15 (NaN stays NaN)
    float r;        // R(a)
    float half_lo;  // lo / 2: a factor f becomes f (1 - lo/2) = fma(-half_lo, f, f)
    float scale;    // e^{-hi/2} 2^64 (normal), multiplied last, then by 2^-64
};
SNN_HD NormalTail normal_tail(float z) {
    const float x = fabsf(z);
    const float a = x > 15.0f ? 15.0f : x;
    const float hi = a * a;
    const float lo = fma_f32(a, a, -hi);
    const float t = (a - 3.0f) / (a + 3.0f);
    float p = 5.659264571e-05f;
    p = fma_f32(p, t, 2.103666156e-05f);
    p = fma_f32(p, t, -4.931918811e-04f);
    p = fma_f32(p, t, -2.916535013e-04f);
    p = fma_f32(p, t, 3.182105953e-03f);
    p = fma_f32(p, t, 5.804011016e-04f);
    p = fma_f32(p, t, -2.395080402e-02f);
    p = fma_f32(p, t, 5.440655723e-02f);
    p = fma_f32(p, t, -4.107759893e-02f);
    p = fma_f32(p, t, -5.524623767e-02f);
    p = fma_f32(p, t, 4.617530107e-01f);
    return {a, p / (a + 0.8f), 0.5f * lo, exp_scaled(-0.5f * hi, 64)};
}

// GELU, the exact form (PyTorch's default): z Phi(z), Phi the standard
// normal distribution function, Phi(z) = erfc(-z / sqrt 2) / 2: with
// m = Phi(-|z|) from normal_tail, Phi(z) = m below 0 and 1 - m above.
// Below 0 the factor -a R(a) (1 - lo/2) multiplies the scaled exponential,
// so a subnormal result rounds once. gelu(-inf) = -0, gelu(inf) = inf.
SNN_HD float gelu(float z) {
    const NormalTail n = normal_tail(z);
    const float m = fma_f32(-n.half_lo, n.r, n.r) * n.scale * 0x1p-64f;
    const float ar = n.a * n.r;
    return z < 0.0f ? -(fma_f32(-n.half_lo, ar, ar) * n.scale * 0x1p-64f) : z * (1.0f - m);
}
// d/dz z Phi(z) = Phi(z) + z phi(z), phi(z) = e^{-z^2/2} / sqrt(2 pi): with
// d = e^{-z^2/2} (R(a) - a / sqrt(2 pi)) (the difference by one fma), it is
// d below 0 and 1 - d above.
SNN_HD float gelu_derivative(float z) {
    const NormalTail n = normal_tail(z);
    const float g = fma_f32(-n.a, 0.39894228040143268f, n.r);
    const float d = fma_f32(-n.half_lo, g, g) * n.scale * 0x1p-64f;
    return z < 0.0f ? d : 1.0f - d;
}

// SiLU (swish): z sigmoid(z); its derivative s (1 + z (1 - s)), s = sigmoid(z).
SNN_HD float silu(float z) { return z * sigmoid_approx(z); }
SNN_HD float silu_derivative(float z) {
    const float s = sigmoid_approx(z);
    return s * (1.0f + z * (1.0f - s));
}

// y = act(z)
SNN_HD float activate(Act a, float z) {
    switch (a) {
        case Act::relu: return z > 0.0f ? z : 0.0f;
        case Act::leaky_relu: return z > 0.0f ? z : kLeakySlope * z;
        case Act::tanh: return tanh_approx(z);
        case Act::sigmoid: return sigmoid_approx(z);
        case Act::gelu: return gelu(z);
        case Act::silu: return silu(z);
        default: return z;
    }
}

// d act / dz from v, which is the output y = act(z) for the monotonic
// activations (y determines the derivative, so z need not be kept) and the
// input z for those of act_uses_input.
SNN_HD float activation_derivative(Act a, float v) {
    switch (a) {
        case Act::relu: return v > 0.0f ? 1.0f : 0.0f;
        case Act::leaky_relu: return v > 0.0f ? 1.0f : kLeakySlope;
        case Act::tanh: return 1.0f - v * v;
        case Act::sigmoid: return v * (1.0f - v);
        case Act::gelu: return gelu_derivative(v);
        case Act::silu: return silu_derivative(v);
        default: return 1.0f;
    }
}

}  // namespace snn
