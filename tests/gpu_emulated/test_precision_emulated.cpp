// The CUDA ops with products at bf16 and fp16 (cuda/low_precision.h,
// cuda/conv_lowered.h) compiled for the host, against the CPU backend's
// float32 kernels given operands rounded as the low precision holds them
// (core/math.h bf16_round / half_round).
//
// Exact cases (dense, conv1d, conv with identity or relu): every product's
// operand is an input, a weight or dz = dy (times 0 or 1), so the GPU, given
// the raw x and W, must round them itself and then equal the CPU on the
// rounded ones up to summation order (products of 16-bit values are exact
// in float). dy is rounded for both sides; biases stay float32 on both.
//
// Attention, lstm and gru also round values they compute (qkv, P, C, h, dz
// of the gates), which the CPU float32 kernels do not: their results must
// agree with the CPU's normwise, ||gpu - cpu|| <= 16 u ||cpu|| with u the
// unit roundoff (2^-8 bf16, 2^-11 fp16), a bound a wrong layout, offset or
// unconverted operand far exceeds, and differ from the float32 GPU result.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "conv_lowered.h"
#include "elementwise.h"
#include "emulated_sides.h"
#include "core/math.h"
#include "low_precision.h"
#include "ops/spec.h"
#include "ops/dims.h"
#include "ops/op.h"

namespace snn {
namespace {

using namespace emulated;

const Precision kLow[] = {Precision::bf16, Precision::f16};

float round_at(Precision p, float v) { return p == Precision::f16 ? half_round(v) : bf16_round(v); }
double unit_roundoff(Precision p) { return p == Precision::f16 ? 0x1p-11 : 0x1p-8; }

Floats rounded(Precision p, Floats v, size_t first = 0, size_t count = SIZE_MAX) {
    for (size_t i = first; i < v.size() && i - first < count; ++i) v[i] = round_at(p, v[i]);
    return v;
}

// |gpu - cpu| <= tol max(1, |cpu|) everywhere, nothing left NaN.
void expect_close(const std::string &what, const Floats &gpu, const Floats &cpu, float tol) {
    ASSERT_EQ(gpu.size(), cpu.size()) << what;
    size_t bad = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const float g = gpu[i], c = cpu[i];
        if (!std::isnan(g) && std::fabs(g - c) <= tol * std::fmax(1.0f, std::fabs(c))) continue;
        if (bad++ < 5) ADD_FAILURE() << what << "[" << i << "]: emulated GPU " << g << ", CPU " << c;
    }
    if (bad > 5) ADD_FAILURE() << what << ": " << bad << " values differ in all";
}

// ||a - b||_2 / ||b||_2.
double normwise(const Floats &a, const Floats &b) {
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        norm += double(b[i]) * b[i];
    }
    return std::sqrt(diff / norm);
}

void expect_normwise(const std::string &what, const Floats &gpu, const Floats &cpu, Precision p) {
    ASSERT_EQ(gpu.size(), cpu.size()) << what;
    for (float g : gpu) ASSERT_FALSE(std::isnan(g)) << what << ": a value left unwritten";
    EXPECT_LE(normwise(gpu, cpu), 16.0 * unit_roundoff(p)) << what;
}

struct Inputs {
    Network net;
    OpInputs raw;
};

Inputs inputs_of(const std::string &spec, int64_t n, std::vector<int32_t> lengths, Precision p) {
    Inputs in{parse_spec(spec), {}};
    const Layer &l = in.net.layers[1];
    const uint64_t seed = std::hash<std::string>()(spec);
    in.raw.x = uniform(size_t(n * l.in.size()), seed, -1.0f, 1.0f);
    in.raw.params = uniform(in.net.param_count, seed + 1, -1.0f, 1.0f);
    in.raw.dy = rounded(p, uniform(size_t(n * l.out.size()), seed + 2, -1.0f, 1.0f));
    in.raw.lengths = std::move(lengths);
    return in;
}

// An exact case: the GPU at p on raw x and W against the CPU at float32 on
// them rounded.
void check_exact(const std::string &spec, int64_t n, std::vector<int32_t> lengths = {}) {
    for (Precision p : kLow) {
        const std::string what = "\"" + spec + "\" at " + precision_name(p);
        SCOPED_TRACE(what);
        const Inputs in = inputs_of(spec, n, lengths, p);
        const Layer &l = in.net.layers[1];
        OpInputs cpu_in = in.raw;
        cpu_in.x = rounded(p, cpu_in.x);
        cpu_in.params = rounded(p, cpu_in.params, l.weight_offset, l.weight_count);
        const OpResult c = run_op(cpu_side(), in.net, n, true, 0, cpu_in);
        const OpResult g = run_op(gpu_side(), in.net, n, true, 0, in.raw, p);
        expect_close(what + " y", g.y, c.y, 1e-5f);
        expect_close(what + " aux", g.aux, c.aux, 1e-5f);
        expect_close(what + " dx", g.dx, c.dx, 1e-4f);
        expect_close(what + " grads", g.grads, c.grads, 1e-4f);
    }
}

// A case with rounded intermediate values: normwise against the CPU on
// rounded inputs, and visibly not float32.
void check_normwise(const std::string &spec, int64_t n, std::vector<int32_t> lengths = {}) {
    for (Precision p : kLow) {
        const std::string what = "\"" + spec + "\" at " + precision_name(p);
        SCOPED_TRACE(what);
        const Inputs in = inputs_of(spec, n, lengths, p);
        OpInputs cpu_in = in.raw;
        cpu_in.x = rounded(p, cpu_in.x);
        cpu_in.params = rounded(p, cpu_in.params);
        const OpResult c = run_op(cpu_side(), in.net, n, true, 0, cpu_in);
        const OpResult g = run_op(gpu_side(), in.net, n, true, 0, in.raw, p);
        const OpResult g32 = run_op(gpu_side(), in.net, n, true, 0, cpu_in);
        expect_normwise(what + " y", g.y, c.y, p);
        expect_normwise(what + " dx", g.dx, c.dx, p);
        expect_normwise(what + " grads", g.grads, c.grads, p);
        EXPECT_GT(normwise(g.y, g32.y), 0.0) << what << ": y equals float32's";
        EXPECT_GT(normwise(g.grads, g32.grads), 0.0) << what << ": the gradients equal float32's";
    }
}

TEST(LowPrecision, ToLow) {
    const Floats v = {1.0f,         1.0f + 0x1p-8f, 1.0f + 0x1p-11f, 65504.0f, 65520.0f, 0x1p-24f, 0x1p-25f,
                      0x1.8p-25f,   -0x1p-14f,      3.0e38f,         -INFINITY, NAN,      -0.0f,    0.1f};
    const uint16_t bf16[] = {0x3f80, 0x3f80, 0x3f80, 0x4780, 0x4780, 0x3380, 0x3300,
                             0x3340, 0xb880, 0x7f62, 0xff80, 0x7fc0, 0x8000, 0x3dcd};
    const uint16_t half[] = {0x3c00, 0x3c04, 0x3c00, 0x7bff, 0x7c00, 0x0001, 0x0000,
                             0x0001, 0x8400, 0x7c00, 0xfc00, 0x7e00, 0x8000, 0x2e66};
    Side gpu = gpu_side();
    Buffer<float> src(gpu, v);
    for (Precision p : kLow) {
        Buffer<uint16_t> dst(gpu, std::vector<uint16_t>(v.size(), 0x1234));
        cu::to_low(static_cast<cu::CudaStream *>(gpu.s)->stream, p, dst.get(), src.get(), v.size());
        const std::vector<uint16_t> got = dst.read();
        const uint16_t *want = p == Precision::f16 ? half : bf16;
        for (size_t i = 0; i < v.size(); ++i)
            EXPECT_EQ(got[i], want[i]) << precision_name(p) << " of " << v[i] << " (value " << i << ")";
    }
}

TEST(LowPrecision, Dense) {
    check_exact("input 7; dense 5", 3);
    check_exact("input 9; dense 6 relu nobias", 4);
    check_exact("input seq 3x4; dense 5 relu", 2);
}

TEST(LowPrecision, Conv1d) {
    check_exact("input seq 8x3; conv1d 3 4 pad=1", 3, {8, 1, 5});
    check_exact("input seq 11x2; conv1d 3 3 relu stride=2 pad=1 dilation=2", 2);
}

TEST(LowPrecision, Attention) {
    check_normwise("input seq 5x8; attention heads=2", 3, {5, 1, 3});
    check_normwise("input seq 6x4; attention heads=2 causal", 1);
}

TEST(LowPrecision, Lstm) {
    check_normwise("input seq 6x3; lstm 5 bidirectional", 3, {6, 1, 4});
    check_normwise("input seq 4x3; lstm 4 last nobias", 2);
}

TEST(LowPrecision, Gru) {
    check_normwise("input seq 6x3; gru 5 bidirectional", 3, {6, 1, 4});
    check_normwise("input seq 4x3; gru 4 last nobias", 2);
}

// conv.cu's cuDNN calls are not emulated; its bf16 and fp16 path is
// conv_lowered.cu's functions alone, run here as conv_forward and
// conv_backward call them, against the CPU's conv without bias on rounded
// x and W; y within y_tol (sums of many terms in another order).
void check_conv(const std::string &spec, int64_t n, float y_tol = 1e-5f) {
    for (Precision p : kLow) {
        const std::string what = "\"" + spec + "\" at " + precision_name(p);
        SCOPED_TRACE(what);
        const Inputs in = inputs_of(spec, n, {}, p);
        const Layer &l = in.net.layers[1];
        const ConvDims d = conv_dims(l);
        OpInputs cpu_in = in.raw;
        cpu_in.x = rounded(p, cpu_in.x);
        cpu_in.params = rounded(p, cpu_in.params);
        const OpResult c = run_op(cpu_side(), in.net, n, true, 0, cpu_in);

        Side gpu = gpu_side();
        cu::CudaStream &cs = *static_cast<cu::CudaStream *>(gpu.s);
        Buffer<float> x(gpu, in.raw.x), w(gpu, in.raw.params), dz(gpu, in.raw.dy);
        Buffer<float> y(gpu, nans(c.y.size())), dx(gpu, nans(in.raw.x.size())), dw(gpu, nans(in.raw.params.size()));
        Buffer<unsigned char> forward_ws(gpu, std::vector<unsigned char>(cu::conv_lowered_bytes(d, n, false, p)));
        Buffer<unsigned char> backward_ws(gpu, std::vector<unsigned char>(cu::conv_lowered_bytes(d, n, true, p)));
        cu::conv_lowered_forward(cs, d, p, n, x.get(), w.get(), y.get(), forward_ws.get());
        if (d.act == Act::relu) cu::bias_activation(cs.stream, y.get(), nullptr, nullptr, c.y.size(), d.cout, 1, d.act);
        expect_close(what + " y", y.read(), c.y, y_tol);
        cu::activation_grad(cs.stream, dz.get(), y.get(), c.y.size(), d.act);
        cu::conv_lowered_backward(cs, d, p, n, x.get(), w.get(), dz.get(), dw.get(), dx.get(), backward_ws.get());
        expect_close(what + " dx", dx.read(), c.dx, 1e-4f);
        expect_close(what + " dW", dw.read(), c.grads, 1e-4f);
    }
}

TEST(LowPrecision, Conv) {
    check_conv("input 5x5x2; conv 3x3 3 nobias", 2);
    check_conv("input 6x5x2; conv 3x2 2 relu stride=2x1 pad=1x0 nobias", 3);
    check_conv("input 4x4x3; conv 1 4 nobias", 2);
    check_conv("input 7x6x2; conv 3 4 stride=2 pad=2 nobias", 2);
    // 576 x 4096 lowered values per sample: one sample per chunk, so dW
    // sums over chunks; y sums 576 terms.
    check_conv("input 64x64x64; conv 3x3 2 pad=1 nobias", 2, 1e-4f);
}

}  // namespace
}  // namespace snn
