// The per-element math of core/math.h (the functions both backends run)
// against double precision over the whole float range, and the numerical
// edge cases of activations, cross-entropy and optimisers through the C API,
// with PyTorch's float32 results.
#include "core/math.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "helpers.h"

using namespace snn_test;

namespace {

float float_from_bits(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// |got - want| in units of the float spacing at want (2^-149 among the
// subnormals). A result that should round to infinity must be that infinity.
double ulp_error(float got, double want) {
    if (std::isnan(want)) return std::isnan(got) ? 0.0 : INFINITY;
    if (std::isinf(float(want))) return got == float(want) ? 0.0 : INFINITY;
    int exponent = 0;
    std::frexp(std::fabs(want), &exponent);
    const double ulp = std::ldexp(1.0, std::max(exponent - 24, -149));
    return std::fabs(double(got) - want) / ulp;
}

struct Worst {
    double ulps = 0.0;
    float at = 0.0f;
    void see(float x, double ulps_at_x) {
        if (!(ulps_at_x <= ulps)) {
            ulps = ulps_at_x;
            at = x;
        }
    }
};

double exp_exact(float x) { return std::exp(double(x)); }
double tanh_exact(float x) { return std::tanh(double(x)); }
double sigmoid_exact(float x) { return 1.0 / (1.0 + std::exp(-double(x))); }
// z Phi(z) and its derivative Phi(z) + z phi(z) in double, erfc keeping the
// far negative tail, with their limits at the infinities.
double gelu_exact(float x) {
    const double z = x;
    return std::isinf(z) ? (z > 0.0 ? z : 0.0) : 0.5 * z * std::erfc(-z / std::sqrt(2.0));
}
double gelu_derivative_exact(float x) {
    const double z = x;
    if (std::isinf(z)) return z > 0.0 ? 1.0 : 0.0;
    return 0.5 * std::erfc(-z / std::sqrt(2.0)) + z * std::exp(-0.5 * z * z) / std::sqrt(2.0 * 3.14159265358979323846);
}

// Every 997th bit pattern (all signs, exponents and both tails, about four
// million floats), the infinities and the points where the forms switch.
template <typename Approx, typename Exact>
Worst sweep(Approx approx, Exact exact) {
    Worst w;
    for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 997) {
        const float x = float_from_bits(uint32_t(bits));
        if (!std::isnan(x)) w.see(x, ulp_error(approx(x), exact(x)));
    }
    const float specials[] = {0.0f,   -0.0f,   INFINITY, -INFINITY, 0.625f,      -0.625f,
                              89.0f,  -104.0f, 88.72f,   88.73f,    -87.33f,     -103.97f,
                              9.01f,  -9.01f,  1e-45f,   -1e-45f,   FLT_MAX,     -FLT_MAX,
                              20.0f,  -20.0f,  8.0f,     -8.0f,     1.17549435e-38f};
    for (float x : specials) {
        w.see(x, ulp_error(approx(x), exact(x)));
        w.see(std::nextafter(x, INFINITY), ulp_error(approx(std::nextafter(x, INFINITY)),
                                                     exact(std::nextafter(x, INFINITY))));
        w.see(std::nextafter(x, -INFINITY), ulp_error(approx(std::nextafter(x, -INFINITY)),
                                                      exact(std::nextafter(x, -INFINITY))));
    }
    return w;
}

TEST(Math, ExpIsWithinOneUlpOverTheWholeRange) {
    const Worst w = sweep(snn::exp_approx, exp_exact);
    EXPECT_LE(w.ulps, 1.0) << "at x = " << w.at;
    EXPECT_EQ(snn::exp_approx(-100.0f), float(std::exp(-100.0)));  // subnormal, not clamped
    EXPECT_EQ(snn::exp_approx(89.0f), INFINITY);
    EXPECT_TRUE(std::isnan(snn::exp_approx(NAN)));
}

TEST(Math, TanhIsWithinOneAndAHalfUlpOverTheWholeRange) {
    const Worst w = sweep(snn::tanh_approx, tanh_exact);
    EXPECT_LE(w.ulps, 1.5) << "at x = " << w.at;
    EXPECT_TRUE(std::isnan(snn::tanh_approx(NAN)));
}

TEST(Math, SigmoidIsWithinTwoAndAHalfUlpsOverTheWholeRange) {
    const Worst w = sweep(snn::sigmoid_approx, sigmoid_exact);
    EXPECT_LE(w.ulps, 2.5) << "at x = " << w.at;
    EXPECT_TRUE(std::isnan(snn::sigmoid_approx(NAN)));
}

// GELU's tail: z Phi(z) is tiny for z < 0 (-8e-38 at z = -13, subnormal
// below -13.15, 0 below -14.4) and keeps its relative accuracy down there.
TEST(Math, GeluIsWithinFourAndAHalfUlpsOverTheWholeRange) {
    const Worst w = sweep(snn::gelu, gelu_exact);
    EXPECT_LE(w.ulps, 4.5) << "at z = " << w.at;
    for (float z = -14.4f; z < 0.0f; z += 0.001f)
        EXPECT_LE(ulp_error(snn::gelu(z), gelu_exact(z)), 4.5) << "at z = " << z;
    EXPECT_TRUE(std::isnan(snn::gelu(NAN)));
    EXPECT_EQ(snn::gelu(INFINITY), INFINITY);
    EXPECT_EQ(snn::gelu(-INFINITY), 0.0f);
    EXPECT_EQ(snn::gelu(-14.5f), 0.0f);
}

// gelu' crosses 0 at z0 = -0.7518, where no float formula keeps a relative
// bound (z gelu'' / gelu' grows without bound): within 1/4 of z0 its error
// is bounded against the size of its terms (Phi(z) = 0.13 to 0.37), in
// units of 2^-26, the float spacing between 1/4 and 1/2.
TEST(Math, GeluDerivativeIsWithinFiveUlpsAwayFromItsRoot) {
    const double z0 = -0.7517915246935645;
    Worst far, near;
    auto see = [&](float z) {
        const float got = snn::gelu_derivative(z);
        const double want = gelu_derivative_exact(z);
        if (std::fabs(z - z0) > 0.25)
            far.see(z, ulp_error(got, want));
        else
            near.see(z, std::fabs(got - want) / 0x1p-26);
    };
    for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 997) {
        const float z = float_from_bits(uint32_t(bits));
        if (!std::isnan(z)) see(z);
    }
    for (float z = -14.6f; z < 0.0f; z += 0.001f) see(z);
    EXPECT_LE(far.ulps, 5.0) << "at z = " << far.at;
    EXPECT_LE(near.ulps, 3.5) << "at z = " << near.at;
    EXPECT_TRUE(std::isnan(snn::gelu_derivative(NAN)));
    EXPECT_EQ(snn::gelu_derivative(INFINITY), 1.0f);
    EXPECT_EQ(snn::gelu_derivative(-INFINITY), 0.0f);
    EXPECT_LT(snn::gelu_derivative(-14.0f), 0.0f);  // -1.5e-42, subnormal
}

// tanh(8) = 1 - 2.25e-7 rounds to 1 - 2^-22; the derivative from the output,
// 1 - y^2, is then 2^-21 = 4.77e-7, PyTorch's float32 value. Rounded tanh
// reaches 1 only at |x| = 9.01.
TEST(Math, TanhDerivativeStaysNonzeroUntilTanhRoundsToOne) {
    EXPECT_EQ(snn::tanh_approx(8.0f), 1.0f - 0x1p-22f);
    EXPECT_EQ(snn::activation_derivative(snn::Act::tanh, snn::tanh_approx(8.0f)), 0x1p-21f);
    EXPECT_EQ(snn::tanh_approx(-8.0f), -1.0f + 0x1p-22f);
    EXPECT_EQ(snn::activation_derivative(snn::Act::tanh, snn::tanh_approx(-8.0f)), 0x1p-21f);
    for (float x = 7.5f; x < 9.0f; x += 0.0625f)
        EXPECT_GT(snn::activation_derivative(snn::Act::tanh, snn::tanh_approx(x)), 0.0f) << x;
    EXPECT_EQ(snn::tanh_approx(9.1f), 1.0f);
}

// For z < 0 the derivative y (1 - y) is y itself: e^z down to the subnormals.
TEST(Math, SigmoidDerivativeOfLargeNegativeInputsIsTinyButNonzero) {
    EXPECT_FLOAT_EQ(snn::activation_derivative(snn::Act::sigmoid, snn::sigmoid_approx(-20.0f)),
                    float(std::exp(-20.0)));
    EXPECT_FLOAT_EQ(snn::sigmoid_approx(-88.0f), float(std::exp(-88.0)));
    EXPECT_EQ(snn::sigmoid_approx(-100.0f), float(std::exp(-100.0)));  // subnormal
}

// ---- through the C API -------------------------------------------------------------

// `input 1; dense 1` from w = b = 0, one step on the gradient (1, 1).
std::vector<float> one_step(snn_optimiser_kind kind, snn_hyperparameter which, double value) {
    Model m = make_model("input 1; dense 1");
    const std::vector<float> zero = {0.0f, 0.0f}, ones = {1.0f, 1.0f};
    EXPECT_EQ(snn_set_parameters(m.get(), zero.data(), zero.size()), SNN_OK);
    Backward b = make_backward(m.get(), 1);
    EXPECT_EQ(snn_set_gradients(b.get(), ones.data(), ones.size()), SNN_OK);
    Optimiser o = make_optimiser(m.get(), kind);
    EXPECT_EQ(snn_optimiser_set(o.get(), SNN_HP_LEARNING_RATE, 0.01), SNN_OK);
    EXPECT_EQ(snn_optimiser_set(o.get(), which, value), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_optimiser_step(o.get(), m.get(), b.get()), SNN_OK) << snn_last_error();
    return get_params(m.get());
}

// Adam's first step is lr * g / |g| whatever beta2: 1 - beta2 must not be
// rounded after beta2 was (1 - float(0.99999) is off by 6.8e-4).
// fp16 conversion against the nearest of every finite half computed in
// double from its fields (ties to the even code, 65520 and up to
// infinity): every 997th float bit pattern, each midpoint between two
// halves and the floats beside it, and every half back to float.
TEST(Math, HalfRoundsToNearestEvenWithSubnormalsAndOverflow) {
    std::vector<double> halves;  // code h in [0, 0x7bff] -> its value
    for (uint32_t h = 0; h < 0x7c00; ++h) {
        const int e = int(h >> 10), m = int(h & 0x3ff);
        halves.push_back(e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25));
    }
    const auto nearest = [&](float x) -> uint16_t {
        const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
        const double a = std::fabs(double(x));
        if (a >= 65520.0) return uint16_t(sign | 0x7c00);
        if (a >= halves.back()) return uint16_t(sign | 0x7bff);
        const size_t hi = size_t(std::lower_bound(halves.begin(), halves.end(), a) - halves.begin());
        if (hi == 0 || halves[hi] == a) return uint16_t(sign | hi);
        const double below = a - halves[hi - 1], above = halves[hi] - a;
        const size_t h = below < above ? hi - 1 : above < below ? hi : ((hi - 1) % 2 == 0 ? hi - 1 : hi);
        return uint16_t(sign | h);
    };
    size_t wrong = 0;
    const auto expect = [&](float x) {
        if (std::isnan(x)) return;
        const uint16_t got = snn::float_to_half(x), want = nearest(x);
        if (got != want && wrong++ < 5) ADD_FAILURE() << x << ": " << got << ", want " << want;
    };
    for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 997) expect(float_from_bits(uint32_t(bits)));
    for (size_t h = 0; h + 1 < halves.size(); ++h) {
        const float mid = float((halves[h] + halves[h + 1]) / 2);  // exact: halves have 11 bits
        for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
            expect(x);
            expect(-x);
        }
    }
    for (float x : {65504.0f, 65519.996f, 65520.0f, INFINITY, -INFINITY, 0x1p-25f, 0x1p-24f, 0x1.8p-25f})
        expect(x);
    EXPECT_EQ(wrong, 0u);
    for (uint32_t h = 0; h < 0x7c00; ++h) {
        ASSERT_EQ(double(snn::half_to_float(uint16_t(h))), halves[h]) << h;
        ASSERT_EQ(double(snn::half_to_float(uint16_t(h | 0x8000))), -halves[h]) << h;
        ASSERT_EQ(snn::float_to_half(snn::half_to_float(uint16_t(h))), h);
    }
    EXPECT_EQ(snn::half_to_float(0x7c00), INFINITY);
    const uint16_t quiet = snn::float_to_half(-NAN);
    EXPECT_TRUE(std::isnan(snn::half_to_float(quiet)));
    EXPECT_EQ(quiet & 0xfe00, 0xfe00) << "a quiet NaN of the same sign";
    EXPECT_EQ(snn::float_to_half(float_from_bits(0x7f800001u)) & 0x7e00, 0x7e00) << "a signalling NaN comes out quiet";
}

TEST(Optimiser, AdamFirstStepIsTheLearningRateWithBeta2Near1) {
    for (snn_optimiser_kind kind : {SNN_OPTIMISER_ADAM, SNN_OPTIMISER_ADAMW}) {
        const std::vector<float> p = one_step(kind, SNN_HP_BETA2, 0.99999);
        EXPECT_EQ(p[0], -0.01f);
        EXPECT_EQ(p[1], -0.01f);
    }
    EXPECT_EQ(one_step(SNN_OPTIMISER_ADAM, SNN_HP_BETA1, 0.99999)[0], -0.01f);
}

// RMSProp's first step is lr g / sqrt((1 - alpha) g^2) = 0.01 / sqrt(1e-5).
TEST(Optimiser, RmspropFirstStepWithAlphaNear1) {
    const double want = -0.01 / (std::sqrt(1e-5) + 1e-8);  // -3.16227
    const std::vector<float> p = one_step(SNN_OPTIMISER_RMSPROP, SNN_HP_ALPHA, 0.99999);
    EXPECT_NEAR(p[0], want, 2e-6);
    EXPECT_NEAR(p[1], want, 2e-6);
}

// `input 1; dense 1 tanh` with w = 1, b = 0 at x = 8: y and dy/dz as
// PyTorch's float32 tanh gives them.
TEST(Activation, SaturatedTanhKeepsItsGradient) {
    Model m = make_model("input 1; dense 1 tanh");
    const std::vector<float> p = {1.0f, 0.0f}, x = {8.0f}, dy = {1.0f};
    ASSERT_EQ(snn_set_parameters(m.get(), p.data(), p.size()), SNN_OK);
    Forward f = make_forward(m.get(), 1);
    Backward b = make_backward(m.get(), 1);
    EXPECT_EQ(run(f.get(), m.get(), x)[0], 0.99999976f);
    ASSERT_EQ(snn_backprop_with_output_gradient(b.get(), f.get(), m.get(), dy.data(), dy.size()),
              SNN_OK)
        << snn_last_error();
    const std::vector<float> g = gradients(b.get(), m.get());
    EXPECT_EQ(g[1], 4.76837158e-7f);       // dy/dz
    EXPECT_EQ(g[0], 8.0f * 4.76837158e-7f);  // x dy/dz
}

// Cross-entropy of one row of logits through `input 3; dense 3` with the
// identity weights, so the logits are the inputs and the bias gradient is
// dL/dlogits.
struct XentResult {
    float loss;
    std::vector<float> grad;
};

XentResult cross_entropy(const std::vector<float> &logits, int32_t label) {
    Model m = make_model("input 3; dense 3");
    const std::vector<float> p = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
    EXPECT_EQ(snn_set_parameters(m.get(), p.data(), p.size()), SNN_OK);
    Forward f = make_forward(m.get(), 1);
    Backward b = make_backward(m.get(), 1);
    EXPECT_EQ(run(f.get(), m.get(), logits), logits);
    EXPECT_EQ(snn_set_labels(b.get(), &label, 1), SNN_OK);
    XentResult r{};
    EXPECT_EQ(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &r.loss), SNN_OK)
        << snn_last_error();
    const std::vector<float> g = gradients(b.get(), m.get());
    r.grad.assign(g.end() - 3, g.end());
    return r;
}

// Logits of +-1e4: the log-sum-exp 1e4 + log 2 is not representable to
// better than 1e-3, so it must not be formed before subtracting.
TEST(Loss, CrossEntropyOfHugeTiedLogitsIsLog2) {
    const XentResult r = cross_entropy({1e4f, 1e4f, -1e4f}, 1);
    EXPECT_FLOAT_EQ(r.loss, 0.693147181f);
    EXPECT_EQ(r.grad, (std::vector<float>{0.5f, -0.5f, 0.0f}));
}

// [20, 5, 5], label 0: loss log(1 + 2 e^-15) = 6.118e-7, not 0; the label's
// gradient is minus the others' sum, so the row sums to 0.
TEST(Loss, CrossEntropyOfAConfidentRowIsTinyButNonzero) {
    const double rest = 2.0 * std::exp(-15.0);
    const XentResult r = cross_entropy({20.0f, 5.0f, 5.0f}, 0);
    EXPECT_NEAR(r.loss, std::log1p(rest), 1e-6 * rest);
    EXPECT_NEAR(r.grad[0], -rest / (1.0 + rest), 1e-6 * rest);
    EXPECT_NEAR(r.grad[1], rest / 2.0 / (1.0 + rest), 1e-6 * rest);
    EXPECT_EQ(r.grad[1], r.grad[2]);
    EXPECT_NEAR(double(r.grad[0]) + r.grad[1] + r.grad[2], 0.0, 1e-13);
}

}  // namespace

// ---- fused multiply-add ----------------------------------------------------------

// x = m 2^e with an integer m of at most 24 bits (x finite).
static void split_float(float x, int64_t *m, int *e) {
    int exponent = 0;
    const float fraction = std::frexp(x, &exponent);
    *m = int64_t(std::ldexp(fraction, 24));
    *e = exponent - 24;
}

// a * b + c rounded once to float, computed exactly in integers: the sum at
// the smallest exponent of the two terms (it fits 127 bits for the operands
// below), then the nearest float, ties to even. Independent of any C
// library's fmaf.
static float exact_fma(float a, float b, float c) {
    int64_t ma, mb, mc;
    int ea, eb, ec;
    split_float(a, &ma, &ea);
    split_float(b, &mb, &eb);
    split_float(c, &mc, &ec);
    if (mc == 0) ec = ea + eb;
    const int e0 = std::min(ea + eb, ec);
    // Shifts by multiplication: the mantissas may be negative.
    __int128 sum = (__int128)(ma * mb) * ((__int128)1 << (ea + eb - e0));
    sum += (__int128)mc * ((__int128)1 << (ec - e0));
    if (sum == 0) return 0.0f;
    const bool negative = sum < 0;
    unsigned __int128 m = negative ? (unsigned __int128)(-sum) : (unsigned __int128)sum;
    int top = 127;
    while (!((m >> top) & 1)) --top;
    int exponent = e0;
    if (top > 23) {  // keep 24 bits, round the rest to nearest, ties to even
        const int drop = top - 23;
        const unsigned __int128 rest = m & ((((unsigned __int128)1) << drop) - 1);
        const unsigned __int128 half = ((unsigned __int128)1) << (drop - 1);
        m >>= drop;
        exponent += drop;
        if (rest > half || (rest == half && (m & 1))) ++m;
    }
    const float r = std::ldexp(float(uint64_t(m)), exponent);
    return negative ? -r : r;
}

struct FmaCase {
    float a, b, c;
};

// Two million operand triples: dense and sparse mantissas, c near -a b
// (cancellation: the case an fma exists for) or anywhere within 2^30 of
// it, and products exactly halfway between two floats moved by a tiny c.
static std::vector<FmaCase> fma_cases() {
    std::vector<FmaCase> cases;
    uint64_t state = 0x9e3779b97f4a7c15ull;
    auto next = [&state] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    auto mantissa = [&](bool sparse) {
        int64_t m = sparse ? int64_t((1u << 23) | (1u << (next() % 23)) | (1u << (next() % 23)))
                           : int64_t((1u << 23) | (next() & 0x7fffff));
        return (next() & 1) ? -m : m;
    };
    for (int i = 0; i < 2000000; ++i) {
        const int ea = int(next() % 21) - 10 - 23, eb = int(next() % 21) - 10 - 23;
        const int64_t ma = mantissa(i % 3 == 0), mb = mantissa(i % 5 == 0);
        int64_t mc;
        int ec;
        if (i % 4 == 1) {
            // a b an odd 25-bit number, halfway between two floats; c far
            // below the double's last bit decides the side, which a sum
            // rounded to double, then to float, loses.
            const int64_t ta = int64_t((next() & 0x7ff) | 0x801), tb = int64_t((next() & 0xfff) | 0x1001);
            const int e = int(next() % 21) - 10;
            const float c = std::ldexp(float(mantissa(false)), e - 53 - int(next() % 21));
            cases.push_back({std::ldexp(float(ta), e), float(tb), c});
            continue;
        }
        if (i % 2 == 0) {
            // c = -(a b cut to 24 bits), moved by a few units: the low part
            // of the product decides the result.
            const int64_t p = ma * mb;  // 47 or 48 bits
            int shift = 0;
            while ((p < 0 ? -p : p) >> (23 + shift)) ++shift;
            mc = -(p >> shift) + int64_t(next() % 5) - 2;  // at most 24 bits
            ec = ea + eb + shift;
        } else {
            mc = mantissa(i % 7 == 0);
            ec = ea + eb + 23 + int(next() % 61) - 30;
        }
        cases.push_back({std::ldexp(float(ma), ea), std::ldexp(float(mb), eb), std::ldexp(float(mc), ec)});
    }
    return cases;
}

TEST(Math, FmaIsCorrectlyRoundedOnThisPlatform) {
    int wrong = 0;
    for (const FmaCase &f : fma_cases()) {
        const float a = f.a, b = f.b, c = f.c;
        const float want = exact_fma(a, b, c);
        if (snn::float_bits(snn::fma_f32(a, b, c)) != snn::float_bits(want) && ++wrong <= 5)
            ADD_FAILURE() << a << " * " << b << " + " << c << ": " << snn::fma_f32(a, b, c) << ", exactly " << want;
    }
    EXPECT_EQ(wrong, 0);
}

TEST(Math, FmaByDoubleIsCorrectlyRoundedAndPassesInfinitiesAndNan) {
    int wrong = 0;
    for (const FmaCase &f : fma_cases()) {
        const float a = f.a, b = f.b, c = f.c;
        const float want = exact_fma(a, b, c);
        if (snn::float_bits(snn::fma_f32_by_double(a, b, c)) != snn::float_bits(want) && ++wrong <= 5)
            ADD_FAILURE() << a << " * " << b << " + " << c << ": " << snn::fma_f32_by_double(a, b, c) << ", exactly "
                          << want;
    }
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(snn::fma_f32_by_double(INFINITY, 2.0f, 1.0f), INFINITY);
    EXPECT_TRUE(std::isnan(snn::fma_f32_by_double(INFINITY, 0.0f, 1.0f)));
    EXPECT_TRUE(std::isnan(snn::fma_f32_by_double(NAN, 1.0f, 1.0f)));
    EXPECT_EQ(snn::fma_f32_by_double(FLT_MAX, 2.0f, -FLT_MAX), FLT_MAX);
    EXPECT_EQ(snn::fma_f32_by_double(FLT_MAX, 4.0f, 0.0f), INFINITY);
}
