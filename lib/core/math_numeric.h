// Numeric building blocks of the per-element math (core/math.h): SNN_HD,
// exact powers of two, the bf16 and fp16 conversions, and the float32
// approximations of exp, tanh and sigmoid every backend shares.
#pragma once

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define SNN_HD __host__ __device__ __forceinline__
#define SNN_HD_INLINE SNN_HD
#else
#define SNN_HD inline
// For the few functions large enough that GCC calls them out of line from
// the loops they are written for, which then no longer vectorise.
#if defined(__GNUC__)
#define SNN_HD_INLINE inline __attribute__((always_inline))
#else
#define SNN_HD_INLINE inline
#endif
#endif

namespace snn {

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

// ---- fused multiply-add ---------------------------------------------------------

// a * b + c rounded once, by software: the product is exact in double
// (24 + 24 bits), the sum's rounding error comes exactly from Knuth's
// TwoSum, and the double nearest the sum is turned into the sum rounded to
// odd (of the two doubles around the exact sum, the one with an odd last
// bit), whose rounding to float is the correctly rounded result (53 bits
// >= 24 + 2). Infinities and NaN pass through the double sum. Host only.
inline float fma_f32_by_double(float a, float b, float c) {
    const double p = double(a) * double(b);
    const double s = p + double(c);
    const double s_minus_c = s - p;
    const double err = (p - (s - s_minus_c)) + (double(c) - s_minus_c);
    if (err == 0.0 || s != s || s - s != 0.0) return float(s);
    uint64_t bits;
    __builtin_memcpy(&bits, &s, sizeof bits);
    if ((bits & 1) == 0) {
        // s is even: the odd neighbour of the exact sum is one step towards it.
        const bool exact_is_larger_in_magnitude = (err > 0.0) == (s > 0.0);
        bits = exact_is_larger_in_magnitude ? bits + 1 : bits - 1;
    }
    double odd;
    __builtin_memcpy(&odd, &bits, sizeof odd);
    return float(odd);
}

// a * b + c rounded once. MinGW-w64's fmaf (the C library of snn.dll) is not
// exact (about a quarter of random operands differ in the last bit), which
// changed GELU's values and every trained parameter on Windows: there snn
// computes it itself; elsewhere the C library's (or the GPU's) is exact.
SNN_HD float fma_f32(float a, float b, float c) {
#if defined(__MINGW32__) && !defined(__CUDA_ARCH__)
    return fma_f32_by_double(a, b, c);
#else
    return fmaf(a, b, c);
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

}  // namespace snn
