// Per-element math shared by every backend: activations and their
// derivatives, the formulas of normalisation and softmax, loss terms and
// optimiser update rules. The CPU backend calls these from plain loops; the
// CUDA backend from kernels (SNN_HD expands to __host__ __device__ under
// nvcc), so the CPU tests check the GPU's math.
#pragma once

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define SNN_HD __host__ __device__ __forceinline__
#else
#define SNN_HD inline
#endif

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

// ---- reduced precision ----------------------------------------------------------

SNN_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
    return uint32_t(__float_as_int(f));
#else
    uint32_t u;
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
#endif
}

SNN_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __int_as_float(int(u));
#else
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
#endif
}

// The bf16 nearest to f (the high 16 bits of a float), ties to even; NaN
// stays a quiet NaN of the same sign, infinities stay, values beyond bf16's
// largest round to infinity (as PyTorch's conversion does).
SNN_HD uint16_t float_to_bf16(float f) {
    const uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

SNN_HD float bf16_to_float(uint16_t h) { return bits_float(uint32_t(h) << 16); }

// f rounded to bf16 and back: what a bf16 operand holds.
SNN_HD float bf16_round(float f) { return bf16_to_float(float_to_bf16(f)); }

// The IEEE half (fp16) nearest to f, ties to even: values from 65520 up
// round to infinity, those below 2^-14 to half's subnormals (multiples of
// 2^-24, 2^-25 and less to zero); NaN stays a quiet NaN of the same sign.
SNN_HD uint16_t float_to_half(float f) {
    const uint32_t u = float_bits(f), a = u & 0x7fffffffu;
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);
    if (a >= 0x38800000u) {  // normal: rebias the exponent (127 - 15), round 13 bits away
        const uint32_t v = a - 0x38000000u;
        return uint16_t(sign | ((v + 0xfffu + ((v >> 13) & 1u)) >> 13));
    }
    const uint32_t e = a >> 23;
    if (e < 102) return sign;  // below 2^-25, or 2^-25 itself (a tie, to even 0)
    // a = m 2^(e - 150) = (m >> shift) units of 2^-24 and a remainder.
    const uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126 - e;
    uint32_t q = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u))) ++q;  // q = 0x400 is the smallest normal
    return uint16_t(sign | q);
}

SNN_HD float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        const float v = float(m) * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_float(sign | ((e + 112) << 23) | (m << 13));
}

// f rounded to fp16 and back: what an fp16 operand holds.
SNN_HD float half_round(float f) { return half_to_float(float_to_half(f)); }

// e^x 2^k for k in [0, 64], e^x to within 1 ulp over the whole float range,
// branch-free so loops over it vectorise (Cephes' method): e^x = 2^n e^r
// with n = round(x / ln 2), |r| <= ln(2)/2, and e^r by a degree-6
// polynomial. With k = 0, results below the smallest normal float come out
// subnormal (0 below e^-103.97), results above the largest float come out
// infinite, and NaN stays NaN; k > 0 keeps tiny values normal, to be scaled
// down after they are multiplied.
SNN_HD float exp_scaled(float x, int k) {
    // Clamped twice: n comes from a copy where NaN became 89 (so the
    // conversion to int is defined), r from one where NaN stays NaN.
    const float low = -104.0f - 0.693147181f * float(k);  // where e^x 2^k underflows
    float c = x < 89.0f ? x : 89.0f;
    c = c > low ? c : low;
    float cx = x > 89.0f ? 89.0f : x;
    cx = cx < low ? low : cx;
    float t = c * 1.44269504088896341f;
    int n = int(t + (t >= 0.0f ? 0.5f : -0.5f));
    float fn = float(n);
    float r = cx - fn * 0.693359375f;  // ln 2 split in two for exact reduction
    r = r - fn * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    // n + k runs from -150 to 192: the scaling is split in two normal
    // powers, the first product exact, the second rounding once (to a
    // subnormal, or to infinity, where the result is one).
    const int m = n + k;
    const int half = m / 2;
    return p * pow2i(half) * pow2i(m - half);
}
SNN_HD float exp_approx(float x) { return exp_scaled(x, 0); }

// tanh to within 1.5 ulp over the whole float range; it reaches +-1 only
// where the correctly rounded tanh does (|x| > 9.01), so the derivative
// 1 - y^2 stays nonzero up to there. For |x| < 0.625, x + x^3 q(x^2) with q
// a degree-4 minimax fit of (tanh(x)/x - 1)/x^2 (relative error 4.4e-9);
// beyond, 1 - 2/(e^{2|x|} + 1), which has no cancellation there. Both forms
// are computed and one kept, with no branches: loops over it vectorise.
SNN_HD float tanh_approx(float x) {
    const float small_limit = 0.625f;
    const float a = fabsf(x);
    const float s = a < small_limit ? a : small_limit;
    const float z = s * s;
    float q = -5.704988741111171e-3f;
    q = q * z + 2.063908923393539e-2f;
    q = q * z + -5.373971582191688e-2f;
    q = q * z + 1.3331442208382657e-1f;
    q = q * z + -3.3333281942427095e-1f;
    const float small = s + s * z * q;
    const float large = 1.0f - 2.0f / (exp_approx(2.0f * a) + 1.0f);
    // Blended by weights 1 and 0 rather than with ?:, which GCC turns into a
    // branch around exp_approx that stops the vectoriser.
    const float w = a < small_limit ? 1.0f : 0.0f;
    return copysignf(w * small + (1.0f - w) * large, x);
}

// 1 / (1 + e^-x) to within 2.5 ulp over the whole float range: e^-|x| never
// overflows, and for x < 0 the form e^x / (1 + e^x) keeps the tiny results
// (subnormal below x = -87.3) instead of rounding them to 0.
SNN_HD float sigmoid_approx(float x) {
    const float e = exp_approx(-fabsf(x));
    return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

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
    const float lo = fmaf(a, a, -hi);
    const float t = (a - 3.0f) / (a + 3.0f);
    float p = 5.659264571e-05f;
    p = fmaf(p, t, 2.103666156e-05f);
    p = fmaf(p, t, -4.931918811e-04f);
    p = fmaf(p, t, -2.916535013e-04f);
    p = fmaf(p, t, 3.182105953e-03f);
    p = fmaf(p, t, 5.804011016e-04f);
    p = fmaf(p, t, -2.395080402e-02f);
    p = fmaf(p, t, 5.440655723e-02f);
    p = fmaf(p, t, -4.107759893e-02f);
    p = fmaf(p, t, -5.524623767e-02f);
    p = fmaf(p, t, 4.617530107e-01f);
    return {a, p / (a + 0.8f), 0.5f * lo, exp_scaled(-0.5f * hi, 64)};
}

// GELU, the exact form (PyTorch's default): z Phi(z), Phi the standard
// normal distribution function, Phi(z) = erfc(-z / sqrt 2) / 2: with
// m = Phi(-|z|) from normal_tail, Phi(z) = m below 0 and 1 - m above.
// Below 0 the factor -a R(a) (1 - lo/2) multiplies the scaled exponential,
// so a subnormal result rounds once. gelu(-inf) = -0, gelu(inf) = inf.
SNN_HD float gelu(float z) {
    const NormalTail n = normal_tail(z);
    const float m = fmaf(-n.half_lo, n.r, n.r) * n.scale * 0x1p-64f;
    const float ar = n.a * n.r;
    return z < 0.0f ? -(fmaf(-n.half_lo, ar, ar) * n.scale * 0x1p-64f) : z * (1.0f - m);
}
// d/dz z Phi(z) = Phi(z) + z phi(z), phi(z) = e^{-z^2/2} / sqrt(2 pi): with
// d = e^{-z^2/2} (R(a) - a / sqrt(2 pi)) (the difference by one fma), it is
// d below 0 and 1 - d above.
SNN_HD float gelu_derivative(float z) {
    const NormalTail n = normal_tail(z);
    const float g = fmaf(-n.a, 0.39894228040143268f, n.r);
    const float d = fmaf(-n.half_lo, g, g) * n.scale * 0x1p-64f;
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

// Dropout's random numbers: a counter-based generator, so element i of a
// pass gets the same number on every backend and with any number of
// threads. key mixes the cache's seed, its pass count and the layer.
SNN_HD uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
SNN_HD uint64_t dropout_key(uint64_t seed, uint64_t pass, uint64_t layer) {
    return mix64(mix64(seed + 0x9E3779B97F4A7C15ull * (pass + 1)) ^ (0xD1B54A32D192ED03ull * (layer + 1)));
}
// 1/(1-p) where element i is kept, 0 where dropped (kept with probability
// 1 - p: a uniform 24-bit number u / 2^24 >= p).
SNN_HD float dropout_scale(uint64_t key, uint64_t i, float p, float keep_scale) {
    const uint32_t u = uint32_t(mix64(key ^ (0x9E3779B97F4A7C15ull * (i + 1))) >> 40);
    return float(u) * (1.0f / 16777216.0f) >= p ? keep_scale : 0.0f;
}

// Batch and layer normalisation: the values normalised together (a
// channel over the batch, or one sample's features) have a mean and an
// invstd = 1 / sqrt(var + eps), var the biased variance, both computed in
// double from sums over the values:
//   xhat = (x - mean) invstd ;  y = xhat weight + bias
SNN_HD float norm_invstd(double var, double eps) { return (float)(1.0 / sqrt(var + eps)); }
SNN_HD float norm_xhat(float x, float mean, float invstd) { return (x - mean) * invstd; }
SNN_HD float norm_y(float xhat, float weight, float bias) { return xhat * weight + bias; }

// The input gradient when the statistics come from the values themselves
// (batchnorm in training), from the sums over the `count` values
// of g and of g xhat (in double): the two means, then per element
//   dx = scale (g - mean(g) - xhat mean(g xhat))
// with g = dy and scale = invstd weight (weight per channel).
struct NormGradRow {
    float mean_g, mean_g_xhat;
};
SNN_HD NormGradRow norm_grad_row(double sum_g, double sum_g_xhat, double count) {
    return {(float)(sum_g / count), (float)(sum_g_xhat / count)};
}
SNN_HD float norm_dx(const NormGradRow &r, float scale, float g, float xhat) {
    return scale * (g - r.mean_g - xhat * r.mean_g_xhat);
}

// Layernorm's input gradient, in a form that does not cancel. With the
// row's mean and biased variance recomputed in double, c = x - mean and
// xhat = c invstd, mean(g xhat) = invstd mean(g c), so
//   dx = invstd ((g - mean(g)) - c mean(g c) / (var + eps))
// evaluated in double. Over few features with var >> eps the two terms
// nearly cancel (over 2 features dx = invstd (g - mean(g)) eps / (var + eps)
// exactly); the float xhat of norm_dx would leave only a few correct digits
// of the difference, double keeps float32's.
struct LayerNormGradRow {
    double mean_g, k, invstd;  // k = mean(g c) / (var + eps)
};
SNN_HD LayerNormGradRow layernorm_grad_row(double sum_g, double sum_g_c, double var, double eps, double count) {
    return {sum_g / count, sum_g_c / count / (var + eps), 1.0 / sqrt(var + eps)};
}
SNN_HD float layernorm_dx(const LayerNormGradRow &r, float g, double c) {
    return (float)(r.invstd * (((double)g - r.mean_g) - c * r.k));
}

// Softmax of one row, given its max and total = sum e^(x - max) (summed in
// double, rounded once): e = e^(x - max), y = e / total. Its input gradient
// from the row's dot = sum dy y (in double, rounded once):
//   dx = y (dy - dot)
SNN_HD float softmax_exp(float x, float max) { return exp_approx(x - max); }
SNN_HD float softmax_y(float e, float total) { return e / total; }
SNN_HD float softmax_dx(float y, float dy, float dot) { return y * (dy - dot); }

// Attention (ops/attention.cpp): query t of a sample with `length` valid
// steps of `steps` sees keys 0 .. attention_keys - 1 (the rest are masked,
// probability exactly 0); always at least key 0. Its softmax runs over the
// scaled scores z = scale * s with softmax_exp and softmax_y.
SNN_HD int64_t attention_keys(int64_t t, int64_t length, int64_t steps, bool causal) {
    const int64_t keys = causal && t + 1 < steps ? t + 1 : steps;
    return length < keys ? length : keys;
}
// Its backward, dz_j = p_j (dp_j - sum_k p_k dp_k), is taken about a pivot,
// dp_m of the row's most probable key m (the first of equals), as
//   dz_j = p_j ((dp_j - dp_m) - rest),  rest = sum_k p_k (dp_k - dp_m)
// (the same where sum p = 1): where p is nearly one-hot, dp_j - sum p dp
// cancels, while here key m's term is exactly 0 and rest is a sum of small
// terms. Then ds = scale * dz.
SNN_HD float attention_dz(float p, float dp, float dp_pivot, float rest) { return p * ((dp - dp_pivot) - rest); }

// Recurrent layers (lstm, gru) over a sequence of T steps, PyTorch's
// packed sequences: at iteration k (0..T-1) of a direction, sample s of
// length len runs its step k (forward) or len - 1 - k (reverse) while
// k < len; later iterations only carry its state, and the step they name,
// k, is one of its padded steps (output 0). So every step is named once.
SNN_HD bool recurrent_active(int64_t k, int32_t len) { return k < len; }
SNN_HD int64_t recurrent_step(int64_t k, int32_t len, bool reverse) {
    return reverse && k < len ? len - 1 - k : k;
}

// One LSTM cell element from its gates' pre-activations zi, zf, zg, zo
// (x W_ih^T + b_ih + h W_hh^T + b_hh) and the previous cell state:
//   i = sigmoid(zi), f = sigmoid(zf), g = tanh(zg), o = sigmoid(zo)
//   c = f c_prev + i g ; h = o tanh(c)
struct LstmCell {
    float i, f, g, o, c, h;
};
SNN_HD LstmCell lstm_cell(float zi, float zf, float zg, float zo, float c_prev) {
    LstmCell r;
    r.i = sigmoid_approx(zi);
    r.f = sigmoid_approx(zf);
    r.g = tanh_approx(zg);
    r.o = sigmoid_approx(zo);
    r.c = r.f * c_prev + r.i * r.g;
    r.h = r.o * tanh_approx(r.c);
    return r;
}

// Its gradients, from dh and dc (of h and c, from later steps and the
// output) and the kept gates and states:
//   dct = dc + dh o (1 - tanh(c)^2) ; dc_prev = dct f
//   dzi = dct g i (1 - i), dzf = dct c_prev f (1 - f), dzg = dct i (1 - g^2),
//   dzo = dh tanh(c) o (1 - o)
struct LstmCellGrad {
    float zi, zf, zg, zo, c_prev;
};
SNN_HD LstmCellGrad lstm_cell_grad(float i, float f, float g, float o, float c, float c_prev, float dh,
                                   float dc) {
    const float tc = tanh_approx(c);
    const float dct = dc + dh * o * (1.0f - tc * tc);
    LstmCellGrad r;
    r.zi = dct * g * i * (1.0f - i);
    r.zf = dct * c_prev * f * (1.0f - f);
    r.zg = dct * i * (1.0f - g * g);
    r.zo = dh * tc * o * (1.0f - o);
    r.c_prev = dct * f;
    return r;
}

// One GRU cell element from the input parts xr, xz, xn (x W_i^T + b_i), the
// recurrent parts hr, hz (h W_h^T + b_h) and hn = h_prev W_hn^T + b_hn:
//   r = sigmoid(xr + hr), z = sigmoid(xz + hz), n = tanh(xn + r hn)
//   h = (1 - z) n + z h_prev
struct GruCell {
    float r, z, n, h;
};
SNN_HD GruCell gru_cell(float xr, float xz, float xn, float hr, float hz, float hn, float h_prev) {
    GruCell c;
    c.r = sigmoid_approx(xr + hr);
    c.z = sigmoid_approx(xz + hz);
    c.n = tanh_approx(xn + c.r * hn);
    c.h = (1.0f - c.z) * c.n + c.z * h_prev;
    return c;
}

// Its gradients from dh and the kept r, z, n, hn and h_prev:
//   dzn = dh (1 - z) (1 - n^2)                 (of xn; hn's is dzn r)
//   dzr = dzn hn r (1 - r), dzz = dh (h_prev - n) z (1 - z)
//   h_prev's own part: dh z (the rest flows through W_hh)
struct GruCellGrad {
    float zr, zz, zn, hn, h_prev;
};
SNN_HD GruCellGrad gru_cell_grad(float r, float z, float n, float hn, float h_prev, float dh) {
    GruCellGrad g;
    g.zn = dh * (1.0f - z) * (1.0f - n * n);
    g.hn = g.zn * r;
    g.zr = g.zn * hn * r * (1.0f - r);
    g.zz = dh * (h_prev - n) * z * (1.0f - z);
    g.h_prev = dh * z;
    return g;
}

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
