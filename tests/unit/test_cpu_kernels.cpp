// The CPU backend's fast paths against its reference paths
// (SNN_CPU_KERNELS=reference): the AVX-512 and AVX2 direct convolutions and
// the direct convolution for few taps against im2col and sgemm, the shifted
// lowering against the generic im2col, and the
// 2x2 max pooling against the generic window loop, on common and on odd
// geometries; the dense layers' products against OpenBLAS; the recurrent
// layers' time loop split over 2 threads against 1.
// Each case runs one forward pass and one backprop (with the input gradient)
// through both, at 1 and 2 threads, with sizes that leave a partial block of
// 16 columns and a remainder of output channels, and compares outputs,
// parameter gradients and input gradients.
#include <stdlib.h>

#include <cstring>
#include <random>

#include "helpers.h"

namespace {

using namespace snn_test;

struct Result {
    std::vector<float> y, grads, dx;
    std::vector<std::string> convs;  // the path each convolution's plan logged, in order
};

// The path named by the log's note of a convolution's plan ("conv 3x3 ...,
// float32, backward: AVX2 direct", or "...: im2col, products by size"),
// kept in a Result.
void note_conv_path(void *user, int32_t level, const char *message) {
    if (level != SNN_LOG_INFO || std::strncmp(message, "conv ", 5) != 0) return;
    const char *path = std::strstr(message, ": ");
    if (!path) return;
    const std::string named = path + 2;
    static_cast<Result *>(user)->convs.push_back(named.substr(0, named.find(", products")));
}

// The environment asks for the reference kernels for the whole run
// (convolutions read it when a cache is made, pooling on every call).
// fast_kernels: SNN_CPU_KERNELS for the fast side (null: unset), or
// "isa=LEVEL": the instruction-set cap LEVEL for the process
// (snn_set_cpu_isa) while the run's caches are made and run.
Result run_case(const std::string &spec, int64_t batch, bool reference, int32_t threads,
                const std::vector<float> *x_override = nullptr, bool training = true,
                const char *fast_kernels = nullptr) {
    EXPECT_EQ(snn_set_num_threads(threads), SNN_OK);
    const bool isa = !reference && fast_kernels && std::strncmp(fast_kernels, "isa=", 4) == 0;
    if (reference)
        setenv("SNN_CPU_KERNELS", "reference", 1);
    else if (fast_kernels && !isa)
        setenv("SNN_CPU_KERNELS", fast_kernels, 1);
    else
        unsetenv("SNN_CPU_KERNELS");
    if (isa) {
        EXPECT_EQ(snn_set_cpu_isa(fast_kernels + 4), SNN_OK);
    }
    Result out;
    EXPECT_EQ(snn_set_log_callback(note_conv_path, &out), SNN_OK);
    Model m = make_model(spec);
    EXPECT_EQ(snn_model_init(m.get(), 7), SNN_OK);
    Forward f = make_forward(m.get(), batch);
    EXPECT_EQ(snn_cache_set_training(f.get(), training ? 1 : 0), SNN_OK);
    Backward b = make_backward(m.get(), batch);
    EXPECT_EQ(snn_set_input_gradient(b.get(), 1), SNN_OK);
    Random r(11);
    const std::vector<float> x =
        x_override ? *x_override : r.uniform_vector(size_t(batch) * input_size(m.get()), -1.0f, 1.0f);
    out.y = run(f.get(), m.get(), x);
    const std::vector<float> t = r.uniform_vector(out.y.size(), -1.0f, 1.0f);
    EXPECT_EQ(snn_set_targets(b.get(), t.data(), t.size()), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_MSE, nullptr), SNN_OK) << snn_last_error();
    out.grads = gradients(b.get(), m.get());
    out.dx.resize(x.size());
    EXPECT_EQ(snn_get_input_gradients(b.get(), out.dx.data(), out.dx.size()), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_set_log_callback(nullptr, nullptr), SNN_OK);
    if (isa) {
        EXPECT_EQ(snn_set_cpu_isa(nullptr), SNN_OK);
    }
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

// fast_kernels: as run_case's (no_conv512: the kernels of a processor
// without AVX-512, the AVX2 direct convolution for stride 1 and the
// lowerings; isa=portable: those of a processor without AVX2 either, the
// direct convolution for few taps and the lowerings). Returns the paths the
// fast side's convolutions took (those of the run at 1 thread).
std::vector<std::string> compare(const std::string &spec, int64_t batch, bool training = true,
                                 const char *fast_kernels = nullptr) {
    std::vector<std::string> convs;
    for (int32_t threads : {1, 2}) {
        SCOPED_TRACE(spec + " threads " + std::to_string(threads) + (training ? " training" : " inference") +
                     (fast_kernels ? std::string(" ") + fast_kernels : std::string()));
        const Result ref = run_case(spec, batch, true, threads, nullptr, training);
        const Result fast = run_case(spec, batch, false, threads, nullptr, training, fast_kernels);
        if (threads == 1) convs = fast.convs;
        expect_close("outputs", spec, fast.y, ref.y, 2e-6);
        expect_close("parameter gradients", spec, fast.grads, ref.grads, 1e-5);
        expect_close("input gradients", spec, fast.dx, ref.dx, 1e-5);
        // The same path twice gives the same bits.
        const Result again = run_case(spec, batch, false, threads, nullptr, training, fast_kernels);
        EXPECT_EQ(again.y, fast.y);
        EXPECT_EQ(again.grads, fast.grads);
        EXPECT_EQ(again.dx, fast.dx);
    }
    EXPECT_EQ(snn_set_num_threads(1), SNN_OK);
    return convs;
}

// The AVX2 direct convolutions (cpu/conv_avx2.h) are built for x86-64
// outside Windows, and taken where the processor has AVX2 and FMA.
bool avx2_direct_expected() {
#if defined(__x86_64__) && !defined(_WIN32)
    EXPECT_EQ(snn_set_cpu_isa("avx2"), SNN_OK);
    const bool avx2 = std::strcmp(snn_cpu_isa(), "avx2") == 0;
    EXPECT_EQ(snn_set_cpu_isa(nullptr), SNN_OK);
    return avx2;
#else
    return false;
#endif
}

// Each of the paths logged is `path` (every convolution's forward and, when
// training, backward plan).
void expect_paths(const std::string &spec, const std::vector<std::string> &convs, const char *path) {
    EXPECT_FALSE(convs.empty()) << spec;
    for (const std::string &c : convs) EXPECT_EQ(c, path) << spec;
}

// A layer in front of the convolution, so that its input gradient (dx) is
// computed too. Each case also with SNN_CPU_KERNELS=no_conv512 and under the
// cap portable: on an AVX-512 processor the AVX-512 direct kernels take
// these layers first, on an AVX2 one the AVX2 direct kernels, and the
// direct kernels for few taps only below AVX2 (there, their loops still run
// as the loader picked them for the processor, lib/cpu/multiversion.h).
TEST(CpuKernels, DirectConvolutionMatchesIm2col) {
    for (const char *kernels : {static_cast<const char *>(nullptr), "no_conv512", "isa=portable"}) {
        compare("input 28x28x1; conv 1x1 1 tanh; conv 3x3 32 relu pad=1", 3, true, kernels);
        // 1 partial block, 2 leftover channels
        compare("input 7x5x1; conv 1x1 1 tanh; conv 3x3 6 relu pad=1", 5, true, kernels);
        // 37 columns: 2 blocks and a tail
        compare("input 9x37x1; conv 1x1 1 tanh; conv 5x5 3 tanh pad=2", 2, true, kernels);
        // 27 taps, no padding, z kept
        compare("input 11x9x3; conv 1x1 3 sigmoid; conv 3x3 5 gelu", 2, true, kernels);
        // 20 taps of 1x1
        compare("input 6x6x20; conv 1x1 20 tanh; conv 1x1 7 silu", 3, true, kernels);
        // kh != kw
        compare("input 8x10x2; conv 1x1 2 tanh; conv 3x5 4 leaky_relu pad=1", 2, true, kernels);
        // padding beyond the kernel
        compare("input 5x5x1; conv 1x1 1 tanh; conv 3x3 4 pad=3 nobias", 2, true, kernels);
        // 7 taps in a column
        compare("input 16x16x1; conv 1x1 1 tanh; conv 7x1 4 relu pad=3", 2, true, kernels);
    }
}

TEST(CpuKernels, ShiftedLoweringMatchesTheGenericLowering) {
    // Stride 1 with as many output as input columns and too many taps for
    // the direct path: the lowering is a shifted copy of each map (and the
    // products gemm512's on a processor with AVX-512 whose OpenBLAS lacks
    // it). The AVX-512 direct kernels take these layers first, and under
    // SNN_CPU_KERNELS=no_conv512 the AVX2 ones: the cap portable rules out
    // both. Stride 2 takes the generic lowering every time.
    for (const char *spec : {"input 6x6x8; conv 3x3 4 pad=1", "input 7x9x5; conv 3x3 6 relu pad=1",
                             "input 10x19x4; conv 5x5 3 tanh pad=2", "input 5x4x40; conv 1x1 3",
                             "input 9x9x1; conv 3x3 4 stride=2", "input 3x3x16; conv 3x3 2 pad=1",
                             "input 14x14x32; conv 3x3 64 relu pad=1"})
        for (const char *kernels : {static_cast<const char *>(nullptr), "no_conv512", "isa=portable"}) {
            const std::vector<std::string> convs = compare(spec, 3, true, kernels);
            // Below AVX2 the stride-1 layers that keep the width take the
            // shifted lowering.
            if (std::strcmp(kernels ? kernels : "", "isa=portable") == 0 && !std::strstr(spec, "stride=2"))
                expect_paths(spec, convs, "im2col (shifted copies)");
        }
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
    // outputs take the scalar loop, rows of 10 the vector blocks. The
    // pooled values are the outputs, so the loss's gradient reaching the
    // pooling is the same on both sides (no product in between, whose
    // kernels differ between the sides).
    for (const int64_t width : {6, 20}) {
        const std::string spec = "input 4x" + std::to_string(width) + "x1; maxpool 2; flatten";
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

// Geometries where a fast path's assumptions break: 1-row and 1-column
// images, padding wider than the image, kernels as large as the padded
// image, strides longer than the kernel, channel counts that are not
// multiples of 8 or 16, batch 1. Each spec runs at batch 1 and 3, in
// training and inference mode. Taps (cin kh kw) above 32 take the lowering,
// the shifted one when stride 1 keeps the width (kw = 2 pw + 1); 32 or
// fewer the direct convolution.
TEST(CpuKernels, OddGeometriesMatchTheReference) {
    for (const char *spec : {
             "input 1x1x4; conv 3 1 pad=1",              // 1x1 image: every tap but the centre misses it
             "input 1x100x8; conv 3 16 pad=1",           // a 1-D signal as a 1-row image
             "input 2x28x4; conv 5 8 pad=2",             // kernel taller than image and padding
             "input 1x1x5; conv 1x7 3 pad=0x3",          // padding 3 columns wide around 1 column
             "input 3x1x9; conv 5x3 4 tanh pad=2x1",     // 1-column image, 135 taps
             "input 3x3x20; conv 7 2 gelu pad=3",        // 7x7 over 3x3, shifted lowering
             "input 1x1x33; conv 3 2 relu pad=1",        // 297 taps over one pixel
             "input 1x5x12; conv 3 4 pad=3",             // padding beyond the height: generic lowering
             "input 2x2x10; conv 6 3 pad=2",             // kernel equal to the padded image: one output
             "input 4x4x9; conv 3 5 stride=4 pad=1",     // stride longer than the kernel
             "input 5x3x3; conv 3 17 silu pad=1",        // 27 taps (direct), 17 output channels
             "input 1x9x2; conv 3 3 pad=4",              // direct, padding beyond the image
             "input 1x1x1; conv 1x7 2 pad=0x3",          // direct, one pixel
             "input 2x17x3; conv 1 3 tanh; maxpool 2",   // one row of 8 pooled outputs
             "input 3x2x5; conv 1 5 tanh; maxpool 2",    // one pooled column, odd last row
             "input 2x2x1; conv 1 1 tanh; maxpool 2",    // one pooled pixel
             "input 1x19x3; conv 1 3 tanh; maxpool 1x2", // 1-row pooling, generic window
             "input 5x5x2; conv 1 2 tanh; maxpool 2 stride=3",  // stride longer than the window
             "input 9x1x3; conv 1 19 tanh; maxpool 3x1", // 1-column maps
         })
        for (int64_t batch : {1, 3})
            for (bool training : {true, false}) compare(spec, batch, training);
}

// Random geometries through every convolution path (the AVX-512 direct
// kernels for stride 1, the direct kernels for few taps, the lowerings):
// kernels 1x1 to 7x7, strides 1 to 3, padding 0 to 3 on each axis, 1 to 70
// channels, tiny and non-square maps, batches 1 to 5, at 1 and 2 threads,
// against the reference lowering. A seed per case, in the trace.
TEST(CpuKernels, RandomConvolutionGeometriesMatchTheReference) {
    std::mt19937 rng(2026);
    const auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const char *acts[] = {"", " relu", " tanh", " gelu"};
    for (int k = 0; k < 48; ++k) {
        const int kh = pick(1, 7), kw = pick(1, 7), stride = pick(1, 3) == 1 ? 1 : pick(1, 3);
        const int ph = pick(0, 3), pw = pick(0, 3);
        const int h = std::max(kh - 2 * ph, 0) + pick(1, 9), w = std::max(kw - 2 * pw, 0) + pick(1, 13);
        const bool wide = pick(0, 3) == 0;
        const int cin = wide ? pick(17, 70) : pick(1, 16), cout = wide ? pick(17, 70) : pick(1, 20);
        const std::string spec = "input " + std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(cin) +
                                 "; conv " + std::to_string(kh) + "x" + std::to_string(kw) + " " +
                                 std::to_string(cout) + acts[pick(0, 3)] + " stride=" + std::to_string(stride) +
                                 " pad=" + std::to_string(ph) + "x" + std::to_string(pw) +
                                 (pick(0, 2) == 0 ? " nobias" : "");
        const int64_t batch = pick(1, 5);
        const bool training = pick(0, 3) != 0;
        compare(spec, batch, training);
        compare(spec, batch, training, "no_conv512");
        compare(spec, batch, training, "avx2");
    }
}

// The AVX2 direct convolutions (SNN_CPU_KERNELS=avx2, the cap avx2, on any
// processor with AVX2 and FMA; and SNN_CPU_KERNELS=no_conv512, which rules
// out the AVX-512 ones) against the reference lowering: widths that leave
// partial vectors of 8 and tiles of 24 or 16 values, 1x1 to 7x7 kernels,
// padding 0 to k - 1, output channel counts that are not multiples of the
// tiles' 4 or 6 rows or of the weight gradient's 3, input channels 1 to 37,
// each activation's epilogue, batch 1 and several, 1 and 2 threads (in
// compare), training and inference; and that they were the path taken.
TEST(CpuKernels, Avx2DirectConvolutionMatchesTheReference) {
    const bool expected = avx2_direct_expected();
    struct Case {
        const char *spec;
        int64_t batch;
    };
    for (const Case &c : {
             Case{"input 28x28x1; conv 3x3 32 relu pad=1", 2},             // the default CNN's first layer
             Case{"input 14x14x32; conv 3x3 64 relu pad=1", 1},            // its second
             Case{"input 5x7x40; conv 1x1 13", 3},                         // 1x1, 13 = 3 x 4 + 1 rows
             Case{"input 9x11x3; conv 5x5 7 tanh pad=2", 2},               // 5x5, 7 rows
             Case{"input 9x11x3; conv 5x5 5 nobias", 1},                   // 5x5, no padding
             Case{"input 10x13x2; conv 7x7 9 gelu pad=3", 2},              // 7x7, z kept for gelu
             Case{"input 8x9x4; conv 7x7 6 silu pad=1x5", 1},              // 7x7, uneven padding
             Case{"input 6x25x5; conv 3x3 11 relu", 3},                    // 25 columns: tiles of 24 and 1
             Case{"input 3x17x37; conv 3x3 2 relu pad=2", 2},              // 2 rows, 37 input channels
             Case{"input 4x33x6; conv 3x5 1 leaky_relu pad=1x4", 2},       // 1 row, padding k - 1
             Case{"input 1x1x8; conv 3x3 5 pad=2", 3},                     // one pixel, padding k - 1
             Case{"input 12x4x2; conv 1x7 8 sigmoid pad=0x6", 2},          // 1x7, padding k - 1
             Case{"input 7x7x64; conv 3x3 18 relu pad=1", 5},              // 7x7 maps: 6 valid lanes of 8
         }) {
        for (const char *kernels : {"avx2", "no_conv512"}) {
            const std::vector<std::string> convs = compare(c.spec, c.batch, /*training=*/true, kernels);
            if (expected) expect_paths(c.spec, convs, "AVX2 direct");
        }
        const std::vector<std::string> inference = compare(c.spec, c.batch, /*training=*/false, "avx2");
        if (expected) expect_paths(c.spec, inference, "AVX2 direct");
    }
}

// Dense products between the plain loops and OpenBLAS take snn's own AVX-512
// product on processors with AVX-512 (the row for A B in cpu/product_paths.cpp): the input
// gradient of `dense 40` here is 16 x 100 x 40 multiply-adds, 100 columns
// (OpenBLAS's allocating case). The reference kernels keep OpenBLAS.
TEST(CpuKernels, DenseInputGradientMatchesTheReference) {
    compare("input 20; dense 100 relu; dense 40 relu; dense 3", 16);
    compare("input 30; dense 37 tanh; dense 45; dense 2", 4);
    compare("input 8; dense 600 relu; dense 500; dense 2", 2);
}

// The three specs that crashed the shifted lowering, end to end from a model
// file: saved, loaded, and run on the fast and the reference kernels.
// The recurrent layers split the batch over the threads for their whole
// time loop (large enough layers): 2 threads, with an odd batch, against 1.
TEST(CpuKernels, RecurrentTimeLoopSplitOverThreadsMatchesOneThread) {
    for (const char *spec : {"input seq 9x16; lstm 96 bidirectional", "input seq 9x16; gru 128 last",
                             "input seq 7x8; gru 96 bidirectional nobias; lstm 64 last"}) {
        SCOPED_TRACE(spec);
        const Result one = run_case(spec, 5, false, 1);
        const Result two = run_case(spec, 5, false, 2);
        expect_close("outputs", spec, two.y, one.y, 1e-6);
        expect_close("parameter gradients", spec, two.grads, one.grads, 1e-5);
        expect_close("input gradients", spec, two.dx, one.dx, 1e-5);
        const Result again = run_case(spec, 5, false, 2);
        EXPECT_EQ(again.y, two.y);
        EXPECT_EQ(again.grads, two.grads);
        EXPECT_EQ(again.dx, two.dx);
    }
    EXPECT_EQ(snn_set_num_threads(1), SNN_OK);
}

// Activations, their derivatives, layer normalisation and residual adds
// split their rows or elements over the pool when large enough (ranges of
// 16 elements, feature blocks of 8 for layernorm's parameter gradients);
// each element and each row is computed as on one thread, so 2 and 3
// threads give the bits of 1. The products stay under the size at which
// they split too (OpenBLAS's kernels may round a block of rows differently
// from the whole), with elementwise passes of 32 768 elements and more;
// 20 features make layernorm's feature split uneven; gelu and tanh as layers of
// their own split too.
TEST(CpuKernels, ElementwiseAndLayernormSplitOverThreadsGiveTheBitsOfOneThread) {
    const std::pair<const char *, int64_t> cases[] = {
        {"input seq 32x12 name=x0; layernorm; dense 40 gelu; dense 12; add x0; dense 20 tanh; layernorm; dense 3", 32},
        {"input seq 30x14 name=x0; dense 14 silu; add x0; gelu; layernorm; tanh; dense 3", 80}};
    for (const auto &[spec, batch] : cases) {
        SCOPED_TRACE(spec);
        const Result one = run_case(spec, batch, false, 1);
        for (int32_t threads : {2, 3}) {
            SCOPED_TRACE(threads);
            const Result more = run_case(spec, batch, false, threads);
            EXPECT_EQ(more.y, one.y);
            EXPECT_EQ(more.grads, one.grads);
            EXPECT_EQ(more.dx, one.dx);
        }
    }
    EXPECT_EQ(snn_set_num_threads(1), SNN_OK);
}

TEST(CpuKernels, OddGeometryModelFilesRun) {
    for (const char *spec : {"input 1x1x4; conv 3 1 pad=1", "input 1x100x8; conv 3 16 pad=1",
                             "input 2x28x4; conv 5 8 pad=2"}) {
        SCOPED_TRACE(spec);
        Model made = make_model(spec);
        ASSERT_EQ(snn_model_init(made.get(), 3), SNN_OK);
        size_t bytes = 0;
        ASSERT_EQ(snn_model_save_to_buffer(made.get(), nullptr, 0, &bytes), SNN_OK);
        std::vector<unsigned char> file(bytes);
        ASSERT_EQ(snn_model_save_to_buffer(made.get(), file.data(), file.size(), &bytes), SNN_OK);
        std::vector<float> outputs[2];
        for (bool reference : {false, true}) {
            if (reference) setenv("SNN_CPU_KERNELS", "reference", 1);
            snn_model *m = nullptr;
            ASSERT_EQ(snn_model_load_from_buffer(file.data(), file.size(), &m), SNN_OK) << snn_last_error();
            Model loaded(m);
            Forward f = make_forward(m, 2);
            Random r(5);
            outputs[reference] = run(f.get(), m, r.uniform_vector(2 * input_size(m), -1.0f, 1.0f));
            unsetenv("SNN_CPU_KERNELS");
        }
        expect_close("outputs", spec, outputs[0], outputs[1], 2e-6);
        double largest = 0.0;
        for (float v : outputs[1]) largest = std::max(largest, double(std::fabs(v)));
        EXPECT_GT(largest, 0.0);  // the inputs reached the outputs
    }
}

// ---- conv1d: the lowered products against a plain loop ----------------------------------

struct Conv1dShape {
    int64_t t, c, k, out, stride, pad, dilation, batch;
};

// torch.nn.Conv1d written out over [T][C] samples (channels last):
// y[s][u][o] = b[o] + sum over c, k of W[o][c][k] x[s][u S - P + k D][c],
// and its gradients for dy, in double, with the sum of the terms' magnitudes
// of each value (the scale of float rounding in a sum of thousands).
struct Conv1dReference {
    std::vector<double> y, dw, db, dx;
    std::vector<double> y_abs, dw_abs, db_abs, dx_abs;
};

Conv1dReference conv1d_reference(const Conv1dShape &g, int64_t t_out, const std::vector<float> &x,
                                 const std::vector<float> &p, const std::vector<float> &dy) {
    const float *w = p.data(), *b = p.data() + g.out * g.c * g.k;
    Conv1dReference r;
    r.y.assign(size_t(g.batch * t_out * g.out), 0.0);
    r.dw.assign(size_t(g.out * g.c * g.k), 0.0);
    r.db.assign(size_t(g.out), 0.0);
    r.dx.assign(x.size(), 0.0);
    r.y_abs = r.y;
    r.dw_abs = r.dw;
    r.db_abs = r.db;
    r.dx_abs = r.dx;
    for (int64_t s = 0; s < g.batch; ++s)
        for (int64_t u = 0; u < t_out; ++u)
            for (int64_t o = 0; o < g.out; ++o) {
                const size_t yo = size_t((s * t_out + u) * g.out + o);
                r.y[yo] = b[o];
                r.y_abs[yo] = std::fabs(b[o]);
                r.db[size_t(o)] += dy[yo];
                r.db_abs[size_t(o)] += std::fabs(dy[yo]);
                for (int64_t c = 0; c < g.c; ++c)
                    for (int64_t k = 0; k < g.k; ++k) {
                        const int64_t ti = u * g.stride - g.pad + k * g.dilation;
                        if (ti < 0 || ti >= g.t) continue;
                        const size_t xi = size_t((s * g.t + ti) * g.c + c), wi = size_t((o * g.c + c) * g.k + k);
                        r.y[yo] += double(w[wi]) * x[xi];
                        r.dw[wi] += double(dy[yo]) * x[xi];
                        r.dx[xi] += double(dy[yo]) * w[wi];
                        r.y_abs[yo] += std::fabs(double(w[wi]) * x[xi]);
                        r.dw_abs[wi] += std::fabs(double(dy[yo]) * x[xi]);
                        r.dx_abs[xi] += std::fabs(double(dy[yo]) * w[wi]);
                    }
            }
    return r;
}

// Within 1e-6 plus 1e-6 of the sum of the terms' magnitudes (a wrong index
// is off by a term, about 0.25 here).
void expect_near_reference(const char *what, const std::string &spec, const std::vector<float> &got,
                           const std::vector<double> &want, const std::vector<double> &scale) {
    ASSERT_EQ(got.size(), want.size()) << spec << ": " << what;
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i)
        if (!(std::fabs(got[i] - want[i]) <= 1e-6 + 1e-6 * scale[i]) && ++bad <= 3)
            ADD_FAILURE() << spec << ": " << what << "[" << i << "] " << got[i] << ", reference " << want[i];
    EXPECT_EQ(bad, 0u) << spec << ": " << what;
}

// Odd geometries: stride past the kernel, dilation, padding wider than the
// kernel, one output step, one input step, and a batch of several lowered
// chunks (T' C K above 2^20 / 3 floats per sample).
TEST(CpuKernels, Conv1dMatchesAPlainLoop) {
    const Conv1dShape shapes[] = {
        {9, 3, 3, 4, 1, 0, 1, 2},     {10, 2, 4, 3, 3, 2, 1, 3},  {7, 5, 2, 2, 2, 0, 3, 2},
        {3, 2, 2, 3, 1, 4, 1, 2},     {6, 4, 6, 5, 1, 0, 1, 3},   {1, 3, 1, 2, 1, 0, 1, 4},
        {1, 2, 3, 2, 2, 1, 1, 1},     {5, 1, 3, 1, 4, 3, 2, 2},   {13, 3, 5, 7, 2, 5, 2, 2},
        {1000, 64, 5, 4, 1, 2, 1, 7},
    };
    Random rng(5);
    for (const Conv1dShape &g : shapes) {
        const std::string spec = "input seq " + std::to_string(g.t) + "x" + std::to_string(g.c) + "; conv1d " +
                                 std::to_string(g.k) + " " + std::to_string(g.out) + " stride=" +
                                 std::to_string(g.stride) + " pad=" + std::to_string(g.pad) +
                                 " dilation=" + std::to_string(g.dilation);
        SCOPED_TRACE(spec);
        Model m = make_model(spec);
        const int64_t t_out = int64_t(output_size(m.get())) / g.out;
        EXPECT_EQ(t_out, (g.t + 2 * g.pad - g.dilation * (g.k - 1) - 1) / g.stride + 1);
        const std::vector<float> p = rng.uniform_vector(param_count(m.get()), -1.0f, 1.0f);
        ASSERT_EQ(snn_set_parameters(m.get(), p.data(), p.size()), SNN_OK);
        const std::vector<float> x = rng.uniform_vector(size_t(g.batch * g.t * g.c), -1.0f, 1.0f);
        const std::vector<float> dy = rng.uniform_vector(size_t(g.batch * t_out * g.out), -1.0f, 1.0f);
        Forward f = make_forward(m.get(), g.batch);
        Backward b = make_backward(m.get(), g.batch);
        ASSERT_EQ(snn_set_input_gradient(b.get(), 1), SNN_OK);
        const std::vector<float> y = run(f.get(), m.get(), x);
        ASSERT_EQ(snn_backprop_with_output_gradient(b.get(), f.get(), m.get(), dy.data(), dy.size()), SNN_OK)
            << snn_last_error();
        const std::vector<float> grads = gradients(b.get(), m.get());
        std::vector<float> dx(x.size());
        ASSERT_EQ(snn_get_input_gradients(b.get(), dx.data(), dx.size()), SNN_OK);
        const Conv1dReference r = conv1d_reference(g, t_out, x, p, dy);
        expect_near_reference("outputs", spec, y, r.y, r.y_abs);
        std::vector<double> want_grads = r.dw, grads_abs = r.dw_abs;
        want_grads.insert(want_grads.end(), r.db.begin(), r.db.end());
        grads_abs.insert(grads_abs.end(), r.db_abs.begin(), r.db_abs.end());
        expect_near_reference("parameter gradients", spec, grads, want_grads, grads_abs);
        expect_near_reference("input gradients", spec, dx, r.dx, r.dx_abs);
    }
}

}  // namespace
