// The CPU backend's fast paths against its reference paths
// (SNN_CPU_KERNELS=reference): the direct convolution for few taps against
// im2col and sgemm, the shifted lowering against the generic im2col, and the
// 2x2 max pooling against the generic window loop.
// Each case runs one forward pass and one backprop (with the input gradient)
// through both, at 1 and 2 threads, with sizes that leave a partial block of
// 16 columns and a remainder of output channels, and compares outputs,
// parameter gradients and input gradients.
#include <stdlib.h>

#include "helpers.h"

namespace {

using namespace snn_test;

struct Result {
    std::vector<float> y, grads, dx;
};

// The environment asks for the reference kernels for the whole run
// (convolutions read it when a cache is made, pooling on every call).
Result run_case(const std::string &spec, int64_t batch, bool reference, int32_t threads,
                const std::vector<float> *x_override = nullptr) {
    EXPECT_EQ(snn_set_num_threads(threads), SNN_OK);
    if (reference)
        setenv("SNN_CPU_KERNELS", "reference", 1);
    else
        unsetenv("SNN_CPU_KERNELS");
    Model m = make_model(spec);
    EXPECT_EQ(snn_model_init(m.get(), 7), SNN_OK);
    Forward f = make_forward(m.get(), batch);
    Backward b = make_backward(m.get(), batch);
    EXPECT_EQ(snn_set_input_gradient(b.get(), 1), SNN_OK);
    Random r(11);
    const std::vector<float> x =
        x_override ? *x_override : r.uniform_vector(size_t(batch) * input_size(m.get()), -1.0f, 1.0f);
    Result out;
    out.y = run(f.get(), m.get(), x);
    const std::vector<float> t = r.uniform_vector(out.y.size(), -1.0f, 1.0f);
    EXPECT_EQ(snn_set_targets(b.get(), t.data(), t.size()), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_MSE, nullptr), SNN_OK) << snn_last_error();
    out.grads = gradients(b.get(), m.get());
    out.dx.resize(x.size());
    EXPECT_EQ(snn_get_input_gradients(b.get(), out.dx.data(), out.dx.size()), SNN_OK) << snn_last_error();
    unsetenv("SNN_CPU_KERNELS");
    return out;
}

void expect_close(const char *what, const std::string &spec, const std::vector<float> &fast,
                  const std::vector<float> &ref, double rel) {
    ASSERT_EQ(fast.size(), ref.size()) << what;
    double scale = 0.0;
    for (float v : ref) scale = std::max(scale, double(std::fabs(v)));
    size_t bad = 0;
    for (size_t i = 0; i < ref.size(); ++i)
        if (!(std::fabs(double(fast[i]) - double(ref[i])) <= rel * scale + 1e-7)) {
            if (++bad <= 3)
                ADD_FAILURE() << spec << ": " << what << "[" << i << "] fast " << fast[i] << " reference " << ref[i]
                              << " (scale " << scale << ")";
        }
    EXPECT_EQ(bad, 0u) << spec << ": " << what;
}

void compare(const std::string &spec, int64_t batch) {
    for (int32_t threads : {1, 2}) {
        SCOPED_TRACE(spec + " threads " + std::to_string(threads));
        const Result ref = run_case(spec, batch, true, threads);
        const Result fast = run_case(spec, batch, false, threads);
        expect_close("outputs", spec, fast.y, ref.y, 2e-6);
        expect_close("parameter gradients", spec, fast.grads, ref.grads, 1e-5);
        expect_close("input gradients", spec, fast.dx, ref.dx, 1e-5);
        // The same path twice gives the same bits.
        const Result again = run_case(spec, batch, false, threads);
        EXPECT_EQ(again.y, fast.y);
        EXPECT_EQ(again.grads, fast.grads);
        EXPECT_EQ(again.dx, fast.dx);
    }
    EXPECT_EQ(snn_set_num_threads(1), SNN_OK);
}

// A layer in front of the convolution, so that its input gradient (dx) is
// computed too.
TEST(CpuKernels, DirectConvolutionMatchesIm2col) {
    compare("input 28x28x1; conv 1x1 1 tanh; conv 3x3 32 relu pad=1", 3);
    compare("input 7x5x1; conv 1x1 1 tanh; conv 3x3 6 relu pad=1", 5);             // 1 partial block, 2 leftover channels
    compare("input 9x37x1; conv 1x1 1 tanh; conv 5x5 3 tanh pad=2", 2);            // 37 columns: 2 blocks and a tail
    compare("input 11x9x3; conv 1x1 3 sigmoid; conv 3x3 5 gelu", 2);               // 27 taps, no padding, z kept
    compare("input 6x6x20; conv 1x1 20 tanh; conv 1x1 7 silu", 3);                 // 20 taps of 1x1
    compare("input 8x10x2; conv 1x1 2 tanh; conv 3x5 4 leaky_relu pad=1", 2);      // kh != kw
    compare("input 5x5x1; conv 1x1 1 tanh; conv 3x3 4 pad=3 nobias", 2);           // padding beyond the kernel
    compare("input 16x16x1; conv 1x1 1 tanh; conv 7x1 4 relu pad=3", 2);           // 7 taps in a column
}

TEST(CpuKernels, ShiftedLoweringMatchesTheGenericLowering) {
    // Stride 1 with as many output as input columns and too many taps for
    // the direct path: the lowering is a shifted copy of each map (and the
    // products gemm512's on a processor with AVX-512 whose OpenBLAS lacks
    // it). Stride 2 takes the generic lowering both times.
    for (const char *spec : {"input 6x6x8; conv 3x3 4 pad=1", "input 7x9x5; conv 3x3 6 relu pad=1",
                             "input 10x19x4; conv 5x5 3 tanh pad=2", "input 5x4x40; conv 1x1 3",
                             "input 9x9x1; conv 3x3 4 stride=2", "input 3x3x16; conv 3x3 2 pad=1",
                             "input 14x14x32; conv 3x3 64 relu pad=1"})
        compare(spec, 3);
}

TEST(CpuKernels, MaxPool2x2MatchesTheGenericWindow) {
    // Even and odd sizes (a last row and column outside every window).
    // Rows of 4 outputs (the scalar loop), 8 (one block), 9 and 14 (a last
    // block overlapping the one before) and 17.
    compare("input 8x8x3; conv 1x1 3 tanh; maxpool 2", 2);
    compare("input 7x9x2; conv 1x1 2 tanh; maxpool 2", 3);
    compare("input 4x16x2; conv 1x1 2 tanh; maxpool 2", 2);
    compare("input 5x19x2; conv 1x1 2 tanh; maxpool 2", 2);
    compare("input 28x28x4; conv 1x1 4 tanh; maxpool 2", 2);
    compare("input 3x35x3; conv 1x1 3 tanh; maxpool 2", 2);
}

TEST(CpuKernels, MaxPool2x2RoutesTiesAndNaNLikeTheGenericWindow) {
    // Inputs with ties inside windows and NaN: both paths must give the
    // same outputs and send each gradient to the same element. The pooling
    // is the first layer, so the inputs reach it unchanged. Rows of 3
    // outputs take the scalar loop, rows of 10 the vector blocks.
    for (const int64_t width : {6, 20}) {
        const std::string spec = "input 4x" + std::to_string(width) + "x1; maxpool 2; flatten; dense 2";
        const int64_t n = 4 * width;
        std::vector<float> x(size_t(3 * n));
        for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7 % 5)) * 0.5f;  // many ties
        // sample 0: NaN in three windows (once in the window's last place)
        x[3] = NAN;
        x[size_t(width) + 8 % width] = NAN;
        x[size_t(2 * width + 5)] = NAN;
        x[size_t(3 * width + 1)] = NAN;
        // sample 1: a window of four equal maxima, and one with the maximum
        // in its last place only
        x[size_t(n + 2)] = x[size_t(n + 3)] = x[size_t(n + width + 2)] = x[size_t(n + width + 3)] = 9.0f;
        x[size_t(n + 2 * width + 4)] = x[size_t(n + 2 * width + 5)] = x[size_t(n + 2 * width + 4 + width)] = -1.0f;
        x[size_t(n + 3 * width + 5)] = 9.5f;
        // sample 2: all equal
        for (int64_t i = 0; i < n; ++i) x[size_t(2 * n + i)] = 0.25f;
        const Result ref = run_case(spec, 3, true, 1, &x);
        const Result fast = run_case(spec, 3, false, 1, &x);
        ASSERT_EQ(fast.dx.size(), ref.dx.size());
        for (size_t i = 0; i < ref.dx.size(); ++i) {
            const bool both_nan = std::isnan(ref.dx[i]) && std::isnan(fast.dx[i]);
            EXPECT_TRUE(both_nan || ref.dx[i] == fast.dx[i])
                << "width " << width << " dx[" << i << "] " << fast.dx[i] << " " << ref.dx[i];
        }
        for (size_t i = 0; i < ref.y.size(); ++i) {
            const bool both_nan = std::isnan(ref.y[i]) && std::isnan(fast.y[i]);
            EXPECT_TRUE(both_nan || ref.y[i] == fast.y[i]) << "width " << width << " y[" << i << "]";
        }
    }
}

}  // namespace
