// The CUDA plugin's kernels on the CPU: cuda/*.cu built against the emulated
// runtime (cuda/emulation/) and run through the backend's own launch code
// (CudaBackend's losses, optimiser steps, copies and checks, the elementwise
// launchers of dense and conv, and conv1d's lowering), compared with the CPU
// backend (or plain loops) at odd sizes. The ops' kernel tables (cuda_op_*)
// are the op harness's (tests/ops: its kernel paths in test_ops_emulated),
// but for the recurrent ops and attention (test_recurrent_emulated.cpp,
// test_attention_emulated.cpp).
//
// Every case runs under three schedules of the blocks of each launch and
// of each block's threads (in order, reversed, shuffled), whose results
// must be identical bit for bit (the kernels reduce in a fixed order), and
// equal to the CPU's: exactly where
// both add in the same order, within a stated tolerance where a reduction's
// order differs. KernelCoverage.EveryKernelHasACase fails when a __global__
// kernel of cuda/ (its .cu, .cuh and .h files) has no case in kKernelCases
// and no kernel-path case of the op harness names it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "cpu/activation.h"
#include "cpu/cpu_backend.h"
#include "conv1d_lower.h"
#include "cuda_backend.h"
#include "elementwise.h"
#include "emulated_sides.h"
#include "../ops/op_cases.h"

namespace snn {
namespace {

using namespace emulated;

// Each kernel of cuda/*.cu that no kernel-path case of the op harness names
// (tests/ops/op_cases.h), and the test that runs it.
const std::map<std::string, std::string> kKernelCases = {
    {"bias_activation_kernel", "Elementwise.BiasActivation"},
    {"to_low_kernel", "LowPrecision.ToLow"},
    {"conv_lower_kernel", "LowPrecision.Conv"},
    {"conv_dz_rows_kernel", "LowPrecision.Conv"},
    {"conv_lower_adjoint_kernel", "LowPrecision.Conv"},
    {"activation_grad_kernel", "Elementwise.ActivationGrad"},
    {"add_kernel", "Elementwise.Add"},
    {"scale_kernel", "Elementwise.Scale"},
    {"channel_sums_kernel", "Elementwise.ChannelSums"},
    {"column_sums_kernel", "Elementwise.ChannelSums"},
    {"slice_totals_kernel", "Elementwise.ChannelSums"},
    {"fill_kernel", "Elementwise.Fill"},
    {"gather_kernel", "Elementwise.GatherDevice"},
    {"nonfinite_kernel", "Elementwise.AllFinite"},
    {"lstm_forward_kernel", "Recurrent.Lstm"},
    {"lstm_backward_kernel", "Recurrent.Lstm"},
    {"gru_forward_kernel", "Recurrent.Gru"},
    {"gru_backward_kernel", "Recurrent.Gru"},
    {"elementwise_loss_kernel", "Losses.Mse"},
    {"finish_sum_kernel", "Losses.Mse"},
    {"xent_kernel", "Losses.CrossEntropy"},
    {"count_rows_kernel", "Losses.SequenceCrossEntropy"},
    {"update_kernel", "Optimisers.Step"},
    {"grad_norm_partial_kernel", "Optimisers.ClipByGradNorm"},
    {"grad_norm_finish_kernel", "Optimisers.ClipByGradNorm"},
    {"conv1d_lower_kernel", "Lowering.Conv1d"},
    {"conv1d_lower_adjoint_kernel", "Lowering.Conv1d"},
    {"attention_softmax_forward_kernel", "AttentionEmulated.MaskedSoftmax"},
    {"attention_softmax_backward_kernel", "AttentionEmulated.MaskedSoftmax"},
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// gpu equals cpu within tol relative to max(1, |cpu|); tol 0 asks for the
// same bits (any NaN equal to any NaN). Reports the first mismatches.
void expect_close(const std::string &what, const Floats &gpu, const Floats &cpu, float tol) {
    ASSERT_EQ(gpu.size(), cpu.size()) << what;
    int reported = 0;
    size_t bad = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const float g = gpu[i], c = cpu[i];
        bool ok;
        if (std::isnan(g) || std::isnan(c)) ok = std::isnan(g) && std::isnan(c);
        else if (tol == 0.0f) ok = same_bits(g, c);
        else ok = std::fabs(g - c) <= tol * std::fmax(1.0f, std::fabs(c));
        if (ok) continue;
        ++bad;
        if (reported++ < 5)
            ADD_FAILURE() << what << "[" << i << "]: emulated GPU " << g << ", CPU " << c
                          << " (tolerance " << tol << ")";
    }
    if (bad > 5) ADD_FAILURE() << what << ": " << bad << " values differ in all";
}

void expect_same(const std::string &what, const Floats &a, const Floats &b) {
    expect_close(what, a, b, 0.0f);
}

// No NaN or infinity in v: where both sides share the math (core/math.h),
// a fault there gives the same NaN on both, which the comparisons accept.
void expect_finite(const std::string &what, const Floats &v) {
    for (size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i])) {
            ADD_FAILURE() << what << "[" << i << "] is " << v[i];
            return;
        }
}

// The three schedules of the blocks and threads; `run` returns the results of
// one run, which must not depend on the schedule.
template <typename Result, typename Run>
Result under_every_schedule(const std::string &what, Run run,
                            void (*compare)(const std::string &, const Result &, const Result &)) {
    const struct {
        emu::Schedule schedule;
        const char *name;
    } schedules[] = {{emu::Schedule::in_order, "in order"},
                     {emu::Schedule::reversed, "reversed"},
                     {emu::Schedule::shuffled, "shuffled"}};
    Result first;
    for (const auto &sc : schedules) {
        emu::set_schedule(sc.schedule, 0x5EED);
        Result r = run();
        if (sc.schedule == emu::Schedule::in_order)
            first = r;
        else
            compare(what + " (blocks and threads " + sc.name + " against in order)", r, first);
    }
    return first;
}

// Every kernel of `kernels` launched at least once between construction and
// check().
class Launched {
public:
    explicit Launched(std::vector<std::string> kernels) : kernels_(std::move(kernels)) {
        for (const std::string &k : kernels_) before_.push_back(emu::launches_of(k.c_str()));
    }
    void check() const {
        for (size_t i = 0; i < kernels_.size(); ++i)
            EXPECT_GT(emu::launches_of(kernels_[i].c_str()), before_[i])
                << kernels_[i] << " never ran";
    }

private:
    std::vector<std::string> kernels_;
    std::vector<uint64_t> before_;
};

// ---- conv1d's lowering ----------------------------------------------------------------

// conv1d's products are cuBLAS calls (conv1d.cu, not emulated); its lowering
// and adjoint are checked against plain loops written here: the lowered
// copy exactly, the adjoint's sums over taps in the same order, exactly.
struct Conv1dLowered {
    Floats col, dx;
};

Conv1dLowered lower_on_gpu(const Conv1dDims &d, int64_t n, const Floats &x, const Floats &dcol,
                           const std::vector<int32_t> &lengths, int64_t first, int64_t nb) {
    const Side g = gpu_side();
    const int64_t cols = d.channels * d.k;
    Buffer<float> xb(g, x), dcol_b(g, dcol), col(g, nans(size_t(nb * d.out_steps * cols)));
    Buffer<float> dx(g, nans(size_t(n * d.steps * d.channels)));
    Buffer<int32_t> lens(g, lengths);
    const int32_t *len = lengths.empty() ? nullptr : lens.get();
    const cudaStream_t stream = static_cast<cu::CudaStream *>(g.s)->stream;
    cu::conv1d_lower(stream, d, xb.get(), len, first, nb, col.get());
    cu::conv1d_lower_adjoint(stream, d, dcol_b.get(), len, first, nb, dx.get());
    return {col.read(), dx.read()};
}

void compare_lowered(const std::string &what, const Conv1dLowered &a, const Conv1dLowered &b) {
    expect_same(what + " col", a.col, b.col);
    expect_same(what + " dx", a.dx, b.dx);
}

TEST(Lowering, Conv1d) {
    Launched launched({"conv1d_lower_kernel", "conv1d_lower_adjoint_kernel"});
    // {T, C, K, stride, pad, dilation}: plain, strided past the kernel,
    // dilated, padding wider than the kernel, one output step, and more
    // values than the emulated grid's threads (the grid-stride loops go round).
    const int64_t shapes[][6] = {{9, 3, 3, 1, 0, 1}, {10, 2, 2, 3, 1, 1}, {11, 5, 3, 2, 2, 3},
                                 {3, 2, 2, 1, 4, 1}, {5, 33, 5, 1, 0, 1}, {1, 1, 1, 1, 0, 1},
                                 {64, 9, 3, 2, 1, 2}};
    const int64_t n = 4, first = 1, nb = 3;
    for (const auto &g : shapes) {
        const int64_t t = g[0], c = g[1], k = g[2], stride = g[3], pad = g[4], dil = g[5];
        const int64_t t_out = (t + 2 * pad - dil * (k - 1) - 1) / stride + 1;
        const Conv1dDims d{t, c, t_out, 2, k, stride, pad, dil};
        for (bool with_lengths : {false, true}) {
            const std::vector<int32_t> lengths =
                with_lengths ? std::vector<int32_t>{int32_t(t), 1, int32_t((t + 1) / 2), int32_t(t)}
                             : std::vector<int32_t>{};
            const std::string what = "T " + std::to_string(t) + " C " + std::to_string(c) + " K " +
                                     std::to_string(k) + " S " + std::to_string(stride) + " P " +
                                     std::to_string(pad) + " D " + std::to_string(dil) +
                                     (with_lengths ? " with lengths" : "");
            SCOPED_TRACE(what);
            const Floats x = uniform(size_t(n * t * c), uint64_t(t * 131 + c));
            const Floats dcol = uniform(size_t(nb * t_out * c * k), uint64_t(k * 17 + stride));
            Conv1dLowered want{Floats(size_t(nb * t_out * c * k)), nans(size_t(n * t * c))};
            for (int64_t s = first; s < first + nb; ++s) {
                const int64_t len = with_lengths ? lengths[size_t(s)] : t;
                for (int64_t u = 0; u < t_out; ++u)
                    for (int64_t ch = 0; ch < c; ++ch)
                        for (int64_t tap = 0; tap < k; ++tap) {
                            const int64_t ti = u * stride - pad + tap * dil;
                            const size_t at = size_t((((s - first) * t_out + u) * c + ch) * k + tap);
                            want.col[at] = ti >= 0 && ti < len ? x[size_t((s * t + ti) * c + ch)] : 0.0f;
                        }
                for (int64_t ti = 0; ti < t; ++ti)
                    for (int64_t ch = 0; ch < c; ++ch) {
                        float sum = 0.0f;
                        for (int64_t tap = 0; tap < k && ti < len; ++tap)
                            for (int64_t u = 0; u < t_out; ++u)
                                if (u * stride - pad + tap * dil == ti)
                                    sum += dcol[size_t((((s - first) * t_out + u) * c + ch) * k + tap)];
                        want.dx[size_t((s * t + ti) * c + ch)] = sum;
                    }
            }
            const Conv1dLowered got = under_every_schedule<Conv1dLowered>(
                what, [&] { return lower_on_gpu(d, n, x, dcol, lengths, first, nb); }, compare_lowered);
            compare_lowered(what + " against the plain loops", got, want);
        }
    }
    launched.check();
}

// ---- the elementwise launchers of dense and conv ------------------------------------

// y = act(y + b[c]) with z = y + b where z is given, as dense (inner 1) and
// conv (inner = h*w) run it after their products.
Floats cpu_bias_activation(Floats y, Floats *z, const Floats *b, int64_t channels,
                           int64_t inner, Act act) {
    const size_t total = y.size();
    for (size_t e = 0; e < total; e += static_cast<size_t>(inner)) {
        const float bias = b ? (*b)[(e / static_cast<size_t>(inner)) % channels] : 0.0f;
        if (z != nullptr)
            for (int64_t r = 0; r < inner; ++r) (*z)[e + r] = y[e + r] + bias;
        activate_span(act, &y[e], bias, &y[e], inner);
    }
    return y;
}

TEST(Elementwise, BiasActivation) {
    Launched launched({"bias_activation_kernel"});
    const struct {
        int64_t n, channels, inner;
        bool bias;
    } shapes[] = {{3, 65, 1, true}, {257, 33, 1, true}, {3, 33, 35, true}, {1, 1, 300001, false},
                  {1, 1, 90300, true}};
    for (const auto &sh : shapes) {
        for (int a = 0; a <= static_cast<int>(Act::silu); ++a) {
            const Act act = static_cast<Act>(a);
            const size_t total = static_cast<size_t>(sh.n * sh.channels * sh.inner);
            if (total > 100000 && act != Act::gelu && act != Act::relu) continue;
            const bool keep_z = act_uses_input(act);
            if (!sh.bias && !keep_z && act == Act::identity) continue;
            const Floats y0 = uniform(total, total + a), b = uniform(sh.channels, 5);
            Floats z_cpu(keep_z ? total : 0);
            const Floats y_cpu = cpu_bias_activation(y0, keep_z ? &z_cpu : nullptr,
                                                     sh.bias ? &b : nullptr, sh.channels,
                                                     sh.inner, act);
            const std::string what = std::string("bias_activation ") + act_name(act) + " " +
                                     std::to_string(total) + " values, inner " +
                                     std::to_string(sh.inner);
            using Pair = std::pair<Floats, Floats>;
            const Pair gpu = under_every_schedule<Pair>(
                what,
                [&] {
                    const Side g = gpu_side();
                    Buffer<float> y(g, y0), bias(g, b), z(g, nans(z_cpu.size()));
                    cu::bias_activation(static_cast<cu::CudaStream *>(g.s)->stream, y.get(),
                                        keep_z ? z.get() : nullptr, sh.bias ? bias.get() : nullptr,
                                        total, sh.channels, sh.inner, act);
                    return Pair(y.read(), z.read());
                },
                +[](const std::string &w, const Pair &p, const Pair &q) {
                    expect_same(w + " y", p.first, q.first);
                    expect_same(w + " z", p.second, q.second);
                });
            expect_same(what + " y", gpu.first, y_cpu);
            expect_same(what + " z", gpu.second, z_cpu);
        }
    }
    launched.check();
}

TEST(Elementwise, ActivationGrad) {
    Launched launched({"activation_grad_kernel"});
    for (size_t total : {size_t(1), size_t(3 * 65), size_t(257 * 33), size_t(300001)}) {
        for (int a = 1; a <= static_cast<int>(Act::silu); ++a) {
            const Act act = static_cast<Act>(a);
            if (total > 100000 && act != Act::gelu && act != Act::sigmoid) continue;
            Floats v = uniform(total, 3 * total + a);
            if (act == Act::sigmoid) v = uniform(total, 3 * total + a, 0.0f, 1.0f);
            const Floats dy0 = uniform(total, 7 * total + a);
            Floats cpu(total);
            derivative_span(act, dy0.data(), v.data(), cpu.data(), static_cast<int64_t>(total));
            const std::string what =
                std::string("activation_grad ") + act_name(act) + " " + std::to_string(total);
            const Floats gpu = under_every_schedule<Floats>(
                what,
                [&] {
                    const Side g = gpu_side();
                    Buffer<float> dy(g, dy0), vb(g, v);
                    cu::activation_grad(static_cast<cu::CudaStream *>(g.s)->stream, dy.get(),
                                        vb.get(), total, act);
                    return dy.read();
                },
                expect_same);
            expect_same(what, gpu, cpu);
        }
    }
    launched.check();
}

// Each thread sums a strided part in float and the block adds the parts as
// a tree: against sums in double, within 1e-6 of the sum of |terms|.
TEST(Elementwise, ChannelSums) {
    Launched launched({"channel_sums_kernel", "column_sums_kernel", "slice_totals_kernel"});
    // One slice and several (images: 8192 values or more a channel; vectors:
    // 64 rows or more), odd channel counts across column blocks, and more
    // channels than the emulated grid's threads (slice_totals goes round).
    const struct {
        int64_t outer, channels, inner;
    } shapes[] = {{1, 1, 1},  {257, 65, 1}, {3, 33, 35}, {3, 1, 90300}, {257, 1, 1},
                  {20, 3, 1000}, {31, 300, 1}, {70, 257, 1}, {70, 1001, 1}};
    for (const auto &sh : shapes) {
        const size_t total = static_cast<size_t>(sh.outer * sh.channels * sh.inner);
        const Floats dz = uniform(total, total);
        Floats expected(sh.channels), scale(sh.channels);
        for (int64_t c = 0; c < sh.channels; ++c) {
            double sum = 0.0, magnitude = 0.0;
            for (int64_t i = 0; i < sh.outer; ++i)
                for (int64_t r = 0; r < sh.inner; ++r) {
                    const float v = dz[(i * sh.channels + c) * sh.inner + r];
                    sum += v;
                    magnitude += std::fabs(v);
                }
            expected[c] = static_cast<float>(sum);
            scale[c] = static_cast<float>(magnitude);
        }
        const std::string what = "channel_sums " + std::to_string(sh.outer) + "x" +
                                 std::to_string(sh.channels) + "x" + std::to_string(sh.inner);
        const Floats gpu = under_every_schedule<Floats>(
            what,
            [&] {
                const Side g = gpu_side();
                Buffer<float> db(g, nans(sh.channels)), dzb(g, dz);
                cu::CudaStream *cs = static_cast<cu::CudaStream *>(g.s);
                cu::channel_sums(cs->stream, cs->sums, db.get(), dzb.get(), sh.outer, sh.channels, sh.inner);
                return db.read();
            },
            expect_same);
        for (int64_t c = 0; c < sh.channels; ++c)
            EXPECT_NEAR(gpu[c], expected[c], 1e-6 * std::fmax(1.0f, scale[c]))
                << what << " channel " << c;
    }
    launched.check();
}

TEST(Elementwise, Add) {
    Launched launched({"add_kernel"});
    for (size_t n : {size_t(1), size_t(257), size_t(300001)}) {
        const Floats dst0 = uniform(n, n), src = uniform(n, n + 1);
        const auto run = [&](Side side) {
            Buffer<float> dst(side, dst0), s(side, src);
            side.be->add(side.s, dst.get(), s.get(), n);
            return dst.read();
        };
        const std::string what = "add " + std::to_string(n);
        expect_same(what, under_every_schedule<Floats>(what, [&] { return run(gpu_side()); },
                                                       expect_same),
                    run(cpu_side()));
    }
    launched.check();
}

// Loss scaling's unscale: x *= factor, by the CPU's rule.
TEST(Elementwise, Scale) {
    Launched launched({"scale_kernel"});
    for (size_t n : {size_t(1), size_t(257), size_t(300001)})
        for (float factor : {0.5f, 65536.0f, 1e-38f}) {
            const Floats x0 = uniform(n, n);
            const auto run = [&](Side side) {
                Buffer<float> x(side, x0);
                side.be->scale(side.s, x.get(), factor, n);
                return x.read();
            };
            const std::string what = "scale " + std::to_string(n) + " by " + std::to_string(factor);
            expect_same(what, under_every_schedule<Floats>(what, [&] { return run(gpu_side()); },
                                                           expect_same),
                        run(cpu_side()));
        }
    launched.check();
}

TEST(Elementwise, Fill) {
    Launched launched({"fill_kernel"});
    for (size_t n : {size_t(1), size_t(33), size_t(300001)}) {
        const auto run = [&](Side side) {
            Buffer<float> dst(side, nans(n + 1));
            side.be->fill(side.s, dst.get(), -2.5f, n);
            return dst.read();
        };
        const std::string what = "fill " + std::to_string(n);
        expect_same(what, under_every_schedule<Floats>(what, [&] { return run(gpu_side()); },
                                                       expect_same),
                    run(cpu_side()));
    }
    launched.check();
}

// Rows of 16, 8, 12 and 3 bytes take the kernel's 16-, 8-, 4- and 1-byte
// words; 9000 rows take two chunks of indices.
TEST(Elementwise, GatherDevice) {
    Launched launched({"gather_kernel"});
    for (size_t row_bytes : {size_t(16), size_t(8), size_t(12), size_t(3)}) {
        for (size_t n : {size_t(1), size_t(257), size_t(9000)}) {
            const size_t rows = 301;
            std::vector<unsigned char> src(rows * row_bytes);
            for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
            std::vector<int64_t> idx(n);
            std::mt19937_64 random(n + row_bytes);
            for (int64_t &i : idx) i = static_cast<int64_t>(random() % rows);
            using Bytes = std::vector<unsigned char>;
            const auto run = [&](Side side) {
                Buffer<unsigned char> s(side, src), dst(side, Bytes(n * row_bytes, 0xEE));
                side.be->gather_device(side.s, dst.get(), s.get(), idx.data(), n, row_bytes);
                return dst.read();
            };
            const std::string what =
                "gather_device " + std::to_string(n) + " rows of " + std::to_string(row_bytes);
            const Bytes gpu = under_every_schedule<Bytes>(
                what, [&] { return run(gpu_side()); },
                +[](const std::string &w, const Bytes &a, const Bytes &b) {
                    EXPECT_TRUE(a == b) << w;
                });
            EXPECT_TRUE(gpu == run(cpu_side())) << what;
        }
    }
    launched.check();
}

TEST(Elementwise, AllFinite) {
    Launched launched({"nonfinite_kernel"});
    const size_t n = 300001;
    const float inf = INFINITY;
    for (size_t at : {n, size_t(0), n / 2, n - 1}) {
        for (float bad : {std::nanf(""), inf, -inf}) {
            Floats x = uniform(n, at);
            if (at < n) x[at] = bad;
            const auto run = [&](Side side) {
                Buffer<float> b(side, x);
                return Floats{side.be->all_finite(side.s, b.get(), n) ? 1.0f : 0.0f};
            };
            const std::string what = "all_finite with " + std::to_string(bad) + " at " +
                                     std::to_string(at);
            const Floats gpu =
                under_every_schedule<Floats>(what, [&] { return run(gpu_side()); }, expect_same);
            EXPECT_EQ(gpu[0], at < n ? 0.0f : 1.0f) << what;
            expect_same(what, gpu, run(cpu_side()));
            if (at == n) break;  // all finite: one run is enough
        }
    }
    launched.check();
}

// ---- losses and optimisers ------------------------------------------------------------

// A loss kernel (core/losses.h) on one side: dy, then the loss.
Floats run_loss(Side side, LossKind kind, int64_t n, int64_t k, const Floats &y, const Floats &t,
                const std::vector<int32_t> &labels, float param = 0.0f) {
    const size_t count = static_cast<size_t>(n * k);
    Buffer<float> yb(side, y), tb(side, t.empty() ? Floats(1) : t), dy(side, nans(count)),
        loss(side, nans(1));
    Buffer<int32_t> lb(side, labels.empty() ? std::vector<int32_t>(1) : labels);
    LossArgs a;
    a.be = side.be;
    a.s = side.s;
    a.n = n;
    a.k = k;
    a.y = yb.get();
    a.targets = tb.get();
    a.labels = lb.get();
    a.param = param;
    a.dy = dy.get();
    a.loss = loss.get();
    side.be->loss_kernel(kind)(a);
    Floats out = dy.read();
    out.push_back(loss.read()[0]);
    return out;
}

// The loss is summed in float per block and thread, then as trees: against
// the CPU's double sum within `tolerance` (1 ulp apart at most on these
// inputs). dy is per element: the same bits.
void expect_loss_matches_cpu(const std::string &what, const std::function<Floats(Side)> &run,
                             float tolerance = 1e-6f) {
    const Floats gpu = under_every_schedule<Floats>(what, [&] { return run(gpu_side()); }, expect_same);
    const Floats cpu = run(cpu_side());
    expect_same(what + " dy", Floats(gpu.begin(), gpu.end() - 1), Floats(cpu.begin(), cpu.end() - 1));
    expect_close(what + " loss", {gpu.back()}, {cpu.back()}, tolerance);
    expect_finite(what + " dy and loss", gpu);
}

TEST(Losses, Mse) {
    Launched launched({"elementwise_loss_kernel", "finish_sum_kernel"});
    const struct {
        int64_t n, k;
    } shapes[] = {{1, 1}, {3, 33}, {257, 65}, {1, 300001}, {257, 1}};
    for (const auto &sh : shapes) {
        const size_t count = static_cast<size_t>(sh.n * sh.k);
        const Floats y = uniform(count, count), t = uniform(count, count + 1);
        expect_loss_matches_cpu("mse " + std::to_string(sh.n) + "x" + std::to_string(sh.k),
                                [&](Side side) { return run_loss(side, LossKind::mse, sh.n, sh.k, y, t, {}); });
    }
    launched.check();
}

TEST(Losses, CrossEntropy) {
    Launched launched({"xent_kernel", "finish_sum_kernel"});
    const struct {
        int64_t n, k;
    } shapes[] = {{1, 1}, {3, 10}, {257, 65}, {70001, 3}, {1, 30001}};
    // Logits in [-20, 20], and in [-120, 120] (40 times the usual [-3, 3]),
    // where e^y overflows unless the row's maximum is subtracted first.
    for (float most : {20.0f, 120.0f})
        for (const auto &sh : shapes) {
            const size_t count = static_cast<size_t>(sh.n * sh.k);
            const Floats y = uniform(count, count, -most, most);
            std::vector<int32_t> labels(sh.n);
            std::mt19937_64 random(count);
            for (int32_t &l : labels) l = static_cast<int32_t>(random() % sh.k);
            const std::string what = "xent " + std::to_string(sh.n) + "x" + std::to_string(sh.k) + " logits to " +
                                     std::to_string(int(most));
            expect_loss_matches_cpu(what, [&](Side side) {
                return run_loss(side, LossKind::logit_crossentropy, sh.n, sh.k, y, {}, labels);
            });
        }
    launched.check();
}

// Cross-entropy over a sequence output: batch x T rows, labels -1 and steps
// past a sample's length left out of the mean (their dy 0); lengths null
// (full length) too.
TEST(Losses, SequenceCrossEntropy) {
    Launched launched({"count_rows_kernel", "xent_kernel", "finish_sum_kernel"});
    const struct {
        int64_t batch, steps, k;
        bool lengths;
    } shapes[] = {{1, 1, 3, true}, {3, 5, 7, true}, {33, 17, 5, true}, {4, 9, 11, false}, {257, 40, 3, true}};
    for (const auto &sh : shapes) {
        const int64_t n = sh.batch * sh.steps;
        const size_t count = static_cast<size_t>(n * sh.k);
        const Floats y = uniform(count, count, -30.0f, 30.0f);
        std::mt19937_64 random(count + 7);
        std::vector<int32_t> labels(n), lengths(sh.batch);
        for (int32_t &l : labels) l = random() % 5 == 0 ? -1 : static_cast<int32_t>(random() % sh.k);
        for (int32_t &l : lengths) l = 1 + static_cast<int32_t>(random() % sh.steps);
        lengths[0] = static_cast<int32_t>(sh.steps);
        const auto run = [&](Side side) {
            Buffer<float> yb(side, y), dy(side, nans(count)), loss(side, nans(2));
            Buffer<int32_t> lb(side, labels), len(side, lengths);
            LossArgs a;
            a.be = side.be;
            a.s = side.s;
            a.n = n;
            a.k = sh.k;
            a.y = yb.get();
            a.labels = lb.get();
            a.dy = dy.get();
            a.loss = loss.get();
            a.sequence = true;
            a.steps = sh.steps;
            a.lengths = sh.lengths ? len.get() : nullptr;
            a.scale = loss.get() + 1;
            side.be->loss_kernel(LossKind::logit_crossentropy)(a);
            Floats out = dy.read();
            out.push_back(loss.read()[0]);
            return out;
        };
        const std::string what = "sequence xent " + std::to_string(sh.batch) + "x" + std::to_string(sh.steps) +
                                 "x" + std::to_string(sh.k);
        expect_loss_matches_cpu(what, run);
        // Rows left out have no gradient.
        const Floats cpu = run(cpu_side());
        for (int64_t i = 0; i < n; ++i) {
            const bool counts = labels[i] >= 0 && (!sh.lengths || i % sh.steps < lengths[i / sh.steps]);
            for (int64_t j = 0; !counts && j < sh.k; ++j) EXPECT_EQ(cpu[i * sh.k + j], 0.0f) << what << " row " << i;
        }
    }
    launched.check();
}

// A loss with a parameter (Huber's delta, smooth L1's beta) at residuals on
// both sides of it and at it (|r| = 1, and r = 0), for each of `params`.
void expect_parameter_loss_matches_cpu(LossKind kind, const std::string &name, std::vector<float> params) {
    Launched launched({"elementwise_loss_kernel", "finish_sum_kernel"});
    const struct {
        int64_t n, k;
    } shapes[] = {{1, 1}, {3, 33}, {257, 65}, {1, 300001}};
    for (const auto &sh : shapes) {
        const size_t count = static_cast<size_t>(sh.n * sh.k);
        Floats y = uniform(count, count), t = uniform(count, count + 1);
        if (count > 3) {
            y[0] = 1.0f, t[0] = 0.0f;  // |r| = 1, the parameter's value 1
            y[1] = -1.0f, t[1] = 0.0f;
            y[2] = 0.5f, t[2] = 0.5f;  // r = 0
        }
        for (float param : params) {
            const std::string what =
                name + " " + std::to_string(param) + " " + std::to_string(sh.n) + "x" + std::to_string(sh.k);
            expect_loss_matches_cpu(what, [&](Side side) { return run_loss(side, kind, sh.n, sh.k, y, t, {}, param); });
        }
    }
    launched.check();
}

// Huber with delta tiny, ordinary and huge.
TEST(Losses, Huber) { expect_parameter_loss_matches_cpu(LossKind::huber, "huber delta", {1e-6f, 1.0f, 1e6f}); }

// Smooth L1 with beta 0 (L1; zero residuals included: gradient 0), tiny,
// ordinary and huge.
TEST(Losses, SmoothL1) {
    expect_parameter_loss_matches_cpu(LossKind::smooth_l1, "smooth L1 beta", {0.0f, 1e-6f, 1.0f, 1e6f});
}

// Binary cross-entropy of logits up to +-1e4 against targets 0, 1, 0.5
// and uniform ones.
TEST(Losses, BceWithLogits) {
    Launched launched({"elementwise_loss_kernel", "finish_sum_kernel"});
    const struct {
        int64_t n, k;
    } shapes[] = {{1, 1}, {3, 33}, {257, 65}, {1, 300001}};
    const float extremes[] = {1e4f, -1e4f, 30.0f, -30.0f, 1e-7f, 0.0f, 88.0f, -88.0f};
    for (const auto &sh : shapes) {
        const size_t count = static_cast<size_t>(sh.n * sh.k);
        Floats y = uniform(count, count, -20.0f, 20.0f), t = uniform(count, count + 1, 0.0f, 1.0f);
        for (size_t i = 0; i < count && i < 24; ++i) {
            y[i] = extremes[i % 8];
            t[i] = i < 8 ? 0.0f : i < 16 ? 1.0f : 0.5f;
        }
        const std::string what = "bce " + std::to_string(sh.n) + "x" + std::to_string(sh.k);
        expect_loss_matches_cpu(what, [&](Side side) {
            return run_loss(side, LossKind::bce_with_logits, sh.n, sh.k, y, t, {});
        });
    }
    launched.check();
}

OptStep step_of(float momentum, int32_t nesterov, int32_t first_step, float weight_decay) {
    OptStep s{};
    s.lr = 0.01f;
    s.momentum = momentum;
    s.eps = 1e-8f;
    s.weight_decay = weight_decay;
    s.lr_weight_decay = 0.01f * weight_decay;
    s.one_minus_beta1 = 0.1f;
    s.one_minus_beta2 = 0.001f;
    s.one_minus_alpha = 0.01f;
    s.bias_correction1 = 0.271f;
    s.bias_correction2 = 0.00299f;
    s.one_minus_dampening = 1.0f;
    s.nesterov = nesterov;
    s.first_step = first_step;
    return s;
}

OptStep with_dampening(OptStep s, float dampening) {
    s.one_minus_dampening = 1.0f - dampening;
    return s;
}

// Per element the same math.h rule: the same bits.
TEST(Optimisers, Step) {
    Launched launched({"update_kernel"});
    const struct {
        OptKind kind;
        OptStep step;
        bool m, v;
        const char *name;
    } rules[] = {
        {OptKind::sgd, step_of(0.0f, 0, 0, 0.0f), false, false, "sgd"},
        {OptKind::sgd, step_of(0.9f, 0, 1, 0.01f), true, false, "sgd momentum first step"},
        {OptKind::sgd, step_of(0.9f, 1, 0, 0.0f), true, false, "sgd nesterov"},
        {OptKind::sgd, with_dampening(step_of(0.9f, 0, 0, 0.01f), 0.5f), true, false, "sgd dampening"},
        {OptKind::adam, step_of(0.0f, 0, 0, 0.01f), true, true, "adam"},
        {OptKind::adamw, step_of(0.0f, 0, 0, 0.01f), true, true, "adamw"},
        {OptKind::rmsprop, step_of(0.0f, 0, 0, 0.0f), false, true, "rmsprop"},
        {OptKind::lion, step_of(0.0f, 0, 0, 0.01f), true, false, "lion"},
    };
    for (const auto &rule : rules) {
        for (size_t count : {size_t(1), size_t(257), size_t(300001)}) {
            const Floats p0 = uniform(count, count), g = uniform(count, count + 1);
            const Floats m0 = uniform(count, count + 2), v0 = uniform(count, count + 3, 0.0f, 1.0f);
            const auto run = [&](Side side) {
                Buffer<float> p(side, p0), gb(side, g), m(side, m0), v(side, v0);
                side.be->optimiser_step(side.s, rule.kind, rule.step, count, p.get(), gb.get(),
                                        rule.m ? m.get() : nullptr, rule.v ? v.get() : nullptr,
                                        nullptr);
                Floats out = p.read(), mo = m.read(), vo = v.read();
                out.insert(out.end(), mo.begin(), mo.end());
                out.insert(out.end(), vo.begin(), vo.end());
                return out;
            };
            const std::string what = std::string(rule.name) + " " + std::to_string(count);
            expect_same(what,
                        under_every_schedule<Floats>(what, [&] { return run(gpu_side()); },
                                                     expect_same),
                        run(cpu_side()));
        }
    }
    launched.check();
}

// Clipping by the gradient norm: the norm (summed in another fixed order on
// each side) to 1e-12 relative, the clipped update of every rule close to
// the CPU's, with the norm above the limit (scaled) and below it (1).
TEST(Optimisers, ClipByGradNorm) {
    Launched launched({"grad_norm_partial_kernel", "grad_norm_finish_kernel", "update_kernel"});
    for (OptKind kind : {OptKind::sgd, OptKind::adam, OptKind::adamw, OptKind::rmsprop, OptKind::lion}) {
        for (size_t count : {size_t(1), size_t(257), size_t(300001)}) {
            for (double max_norm : {0.5, 1e9}) {
                OptStep step = step_of(0.9f, 0, 0, 0.01f);
                step.max_grad_norm = max_norm;
                const Floats p0 = uniform(count, count), g = uniform(count, count + 1, -300.0f, 300.0f);
                const Floats m0 = uniform(count, count + 2), v0 = uniform(count, count + 3, 0.0f, 1.0f);
                double norms[2] = {-1.0, -1.0};
                const auto run = [&](Side side, double *norm_out) {
                    Buffer<float> p(side, p0), gb(side, g), m(side, m0), v(side, v0);
                    Buffer<double> norm(side, std::vector<double>(kGradNormDoubles, -1.0));
                    side.be->optimiser_step(side.s, kind, step, count, p.get(), gb.get(), m.get(), v.get(),
                                            norm.get());
                    *norm_out = norm.read()[0];
                    Floats out = p.read(), mo = m.read(), vo = v.read();
                    out.insert(out.end(), mo.begin(), mo.end());
                    out.insert(out.end(), vo.begin(), vo.end());
                    EXPECT_EQ(gb.read(), g) << "the gradient is left as it was";
                    return out;
                };
                const std::string what = std::to_string(int(kind)) + " " + std::to_string(count) + " max " +
                                         std::to_string(max_norm);
                const Floats gpu = run(gpu_side(), &norms[0]);
                const Floats cpu = run(cpu_side(), &norms[1]);
                double expected = 0.0;
                for (float x : g) expected += double(x) * double(x);
                expected = std::sqrt(expected);
                EXPECT_NEAR(norms[0], expected, 1e-12 * expected) << what;
                EXPECT_NEAR(norms[1], expected, 1e-12 * expected) << what;
                expect_close(what, gpu, cpu, 1e-6f);
            }
        }
    }
    launched.check();
}

// ---- the emulation itself ------------------------------------------------------------

// Kernels of this file only: a barrier reached by some threads of a block.
__global__ void divergent_barrier_kernel(float *out) {
    if (threadIdx.x < 32) __syncthreads();
    out[threadIdx.x] = 1.0f;
}

__global__ void early_exit_kernel(float *out) {
    if (threadIdx.x == 5) return;
    __syncthreads();
    out[threadIdx.x] = 1.0f;
}

// Every thread reads its neighbour's value after a barrier.
__global__ void neighbour_kernel(float *out) {
    __shared__ float buf[cu::kThreads];
    buf[threadIdx.x] = static_cast<float>(threadIdx.x + blockIdx.x);
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = buf[(threadIdx.x + 1) % blockDim.x];
}

std::string launch_error() {
    const cudaError_t status = cudaGetLastError();
    return status == cudaSuccess ? "" : std::string(cudaGetErrorString(status));
}

TEST(Emulation, BarrierReachedBySomeThreadsFails) {
    Floats out(cu::kThreads);
    SNN_LAUNCH(divergent_barrier_kernel, 1, cu::kThreads, nullptr, out.data());
    const std::string error = launch_error();
    EXPECT_NE(error.find("divergent_barrier_kernel"), std::string::npos) << error;
    EXPECT_NE(error.find("ended while thread"), std::string::npos) << error;
    SNN_LAUNCH(early_exit_kernel, 2, cu::kThreads, nullptr, out.data());
    const std::string exit_error = launch_error();
    EXPECT_NE(exit_error.find("thread (5,0,0) ended while"), std::string::npos) << exit_error;
}

// Threads at two different barriers: the message names both sites.
__global__ void two_barriers_kernel(float *out) {
    if (threadIdx.x % 2 == 0) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 2.0f;
}

TEST(Emulation, ThreadsAtDifferentBarriersFail) {
    Floats out(cu::kThreads);
    SNN_LAUNCH(two_barriers_kernel, 1, cu::kThreads, nullptr, out.data());
    const std::string error = launch_error();
    EXPECT_NE(error.find("different __syncthreads"), std::string::npos) << error;
    EXPECT_NE(error.find("test_gpu_emulated.cpp"), std::string::npos) << error;
}

// After a failed launch the next one runs normally, under every schedule.
TEST(Emulation, BarrierOrdersSharedMemory) {
    Floats out(3 * cu::kThreads);
    for (emu::Schedule s :
         {emu::Schedule::in_order, emu::Schedule::reversed, emu::Schedule::shuffled}) {
        emu::set_schedule(s, 1);
        SNN_LAUNCH(divergent_barrier_kernel, 1, cu::kThreads, nullptr, out.data());
        EXPECT_NE(launch_error(), "");
        SNN_LAUNCH(neighbour_kernel, 3, cu::kThreads, nullptr, out.data());
        EXPECT_EQ(launch_error(), "");
        for (unsigned b = 0; b < 3; ++b)
            for (unsigned t = 0; t < cu::kThreads; ++t)
                ASSERT_EQ(out[b * cu::kThreads + t], (float)((t + 1) % cu::kThreads + b));
    }
}

// Block b + 1 reads what block b wrote: a dependence between the blocks of
// one launch, which a GPU does not order.
__global__ void chained_blocks_kernel(float *out) {
    if (threadIdx.x == 0) out[blockIdx.x + 1] = out[blockIdx.x] + 1.0f;
}

// The schedules order the blocks too: the chain comes out whole only with
// the blocks in order.
TEST(Emulation, BlocksRunInTheScheduleOrder) {
    const unsigned blocks = 16;
    std::map<emu::Schedule, Floats> out;
    for (emu::Schedule s :
         {emu::Schedule::in_order, emu::Schedule::reversed, emu::Schedule::shuffled}) {
        emu::set_schedule(s, 1);
        out[s] = Floats(blocks + 1, 0.0f);
        SNN_LAUNCH(chained_blocks_kernel, blocks, 32, nullptr, out[s].data());
        EXPECT_EQ(launch_error(), "");
    }
    EXPECT_EQ(out[emu::Schedule::in_order][blocks], float(blocks));
    EXPECT_EQ(out[emu::Schedule::reversed][blocks], 1.0f);
    EXPECT_NE(out[emu::Schedule::shuffled], out[emu::Schedule::in_order]);
    EXPECT_NE(out[emu::Schedule::shuffled], out[emu::Schedule::reversed]);
}

// Writes element n of out, one past the end of its n floats.
__global__ void past_the_end_kernel(float *out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i] = 1.0f;
}

// A store past the end of device memory aborts, naming the kernel (or
// cudaFree, for a host copy) and the allocation's size; under
// AddressSanitizer the store itself is reported.
TEST(Emulation, StorePastTheEndAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            float *out = nullptr;
            cudaMalloc(&out, 257 * sizeof(float));
            SNN_LAUNCH(past_the_end_kernel, 2, cu::kThreads, nullptr, out, 257);
        },
        "after kernel past_the_end_kernel: memory outside a 1028-byte device allocation was "
        "overwritten: its byte 1028 \\(past its end\\)|use-after-poison");
    EXPECT_DEATH(
        {
            char *p = nullptr;
            cudaMalloc(&p, 10);
            p[-1] = static_cast<char>(~p[-1]);
            cudaFree(p);
        },
        "at cudaFree: memory outside a 10-byte device allocation was overwritten: its byte -1 "
        "\\(before its start\\)|use-after-poison");
}

// A bad configuration reaches the backend's launch check as on a GPU.
TEST(Emulation, BadConfigurationIsAnError) {
    Floats out(cu::kThreads);
    SNN_LAUNCH(neighbour_kernel, 0, cu::kThreads, nullptr, out.data());
    EXPECT_NE(launch_error().find("invalid configuration"), std::string::npos);
    SNN_LAUNCH(neighbour_kernel, 1, 2048, nullptr, out.data());
    EXPECT_NE(launch_error().find("invalid configuration"), std::string::npos);
    gpu_side();  // the backend's error functions are set
    SNN_LAUNCH(neighbour_kernel, 0, cu::kThreads, nullptr, out.data());
    try {
        cu::check_launch("neighbour_kernel");
        ADD_FAILURE() << "check_launch did not raise";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), SNN_ERR_CUDA);
        EXPECT_NE(std::string(e.what()).find("neighbour_kernel: invalid configuration"),
                  std::string::npos)
            << e.what();
    }
}

// ---- coverage -------------------------------------------------------------------------

// The __global__ kernels of every .cu, .cuh and .h file under dir.
std::set<std::string> kernels_in(const std::string &dir) {
    const std::regex global(R"(__global__\s+[\w:<>\s\*]*?\b(\w+)\s*\()");
    std::set<std::string> names;
    for (const auto &entry : std::filesystem::recursive_directory_iterator(dir)) {
        const std::filesystem::path ext = entry.path().extension();
        if (ext != ".cu" && ext != ".cuh" && ext != ".h") continue;
        std::ifstream in(entry.path());
        std::stringstream source;
        source << in.rdbuf();
        const std::string s = source.str();
        for (std::sregex_iterator it(s.begin(), s.end(), global), end; it != end; ++it)
            names.insert((*it)[1]);
    }
    return names;
}

// A kernel in a header or a subfolder is found as one in a .cu file.
TEST(KernelCoverage, ScansHeadersAndSubfolders) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("snn_kernel_scan_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir / "sub");
    const std::pair<const char *, const char *> files[] = {
        {"a.cu", "__global__ void in_cu_kernel(float *x) {}\n"},
        {"b.cuh", "template <int N>\n__global__ void in_cuh_kernel(const float *x, int n) {}\n"},
        {"c.h", "static __global__ void in_h_kernel() {}\n"},
        {"sub/d.cuh", "__global__ void in_subfolder_kernel(int *n) {}\n"},
        {"e.txt", "__global__ void not_a_source_kernel() {}\n"}};
    for (const auto &f : files) std::ofstream(dir / f.first) << f.second;
    const std::set<std::string> kernels = kernels_in(dir.string());
    std::filesystem::remove_all(dir);
    EXPECT_EQ(kernels, (std::set<std::string>{"in_cu_kernel", "in_cuh_kernel", "in_h_kernel",
                                               "in_subfolder_kernel"}));
}

// The kernels that the op harness's kernel paths name: its emulated build
// checks that each case launches them.
std::set<std::string> kernels_of_kernel_paths() {
    std::set<std::string> names;
    for (const op_harness::KernelPathCase &c : op_harness::kKernelPaths)
        for (const char *k : c.kernels)
            if (k != nullptr) names.insert(k);
    return names;
}

TEST(KernelCoverage, EveryKernelHasACase) {
    const char *dir = std::getenv("SNN_CUDA_SOURCE_DIR");
    ASSERT_NE(dir, nullptr) << "SNN_CUDA_SOURCE_DIR names the cuda/ folder";
    const std::set<std::string> kernels = kernels_in(dir);
    const std::set<std::string> harness = kernels_of_kernel_paths();
    EXPECT_GE(kernels.size(), kKernelCases.size());
    std::set<std::string> tests;
    const ::testing::UnitTest &unit = *::testing::UnitTest::GetInstance();
    for (int i = 0; i < unit.total_test_suite_count(); ++i) {
        const ::testing::TestSuite &suite = *unit.GetTestSuite(i);
        for (int j = 0; j < suite.total_test_count(); ++j)
            tests.insert(std::string(suite.name()) + "." + suite.GetTestInfo(j)->name());
    }
    for (const std::string &k : kernels) {
        if (harness.count(k)) {
            EXPECT_FALSE(kKernelCases.count(k)) << k << ": a case here and in the op harness";
            continue;
        }
        auto it = kKernelCases.find(k);
        if (it == kKernelCases.end()) {
            ADD_FAILURE() << "kernel " << k << " of " << dir
                          << " has no emulated case: add one to tests/gpu_emulated, or a kernel path to "
                             "tests/ops/op_cases.h";
            continue;
        }
        EXPECT_TRUE(tests.count(it->second)) << k << ": no test " << it->second;
    }
    for (const auto &kc : kKernelCases)
        EXPECT_TRUE(kernels.count(kc.first)) << kc.first << " is no longer a kernel of " << dir;
    for (const std::string &k : harness)
        EXPECT_TRUE(kernels.count(k)) << k << " (tests/ops/op_cases.h) is no longer a kernel of " << dir;
}

}  // namespace
}  // namespace snn
