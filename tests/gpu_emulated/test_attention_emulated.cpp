// The attention op's CUDA kernels (cuda/attention.cu: the mask + softmax
// kernel and its backward, between the emulated cuBLAS products) against the
// CPU's, through both kernel tables, with per-sample lengths: one head, a
// head per feature, causal, lengths 1 and T in one batch, a batch of one,
// rows longer than a block, saturated scores. Each run is repeated under the
// three schedules of the blocks and threads, which must give the same bits; the
// CPU sums its rows in another order, so the comparison has a tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "emulated_sides.h"
#include "ops/spec.h"
#include "ops/op.h"

namespace snn {
namespace {

using namespace emulated;

bool same_bits(const Floats &a, const Floats &b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// |gpu - cpu| <= tol * max(1, |cpu|), no NaN; reports the first mismatches.
void expect_close(const std::string &what, const Floats &gpu, const Floats &cpu, float tol) {
    ASSERT_EQ(gpu.size(), cpu.size()) << what;
    size_t bad = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const bool ok = std::isfinite(gpu[i]) && std::fabs(gpu[i] - cpu[i]) <= tol * std::fmax(1.0f, std::fabs(cpu[i]));
        if (!ok && bad++ < 5) ADD_FAILURE() << what << "[" << i << "]: emulated GPU " << gpu[i] << ", CPU " << cpu[i];
    }
}

// Runs spec's attention on both sides with inputs uniform in
// [-scale, scale] and parameters in [-0.5, 0.5].
void check(const std::string &spec, std::vector<int32_t> lengths, float scale, float tol) {
    const Network net = parse_spec(spec);
    const Layer &l = net.layers[1];
    const int64_t n = lengths.empty() ? 2 : int64_t(lengths.size());
    std::mt19937_64 random(std::hash<std::string>()(spec));
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    OpInputs in;
    in.x.resize(size_t(n * l.in.size()));
    in.params.resize(net.param_count);
    in.dy.resize(size_t(n * l.out.size()));
    in.lengths = lengths;
    for (float &v : in.x) v = scale * unit(random);
    for (float &v : in.params) v = 0.5f * unit(random);
    for (float &v : in.dy) v = unit(random);
    SCOPED_TRACE(spec);
    const OpResult cpu = run_op(cpu_side(), net, n, true, 0, in);
    const emu::Schedule schedules[] = {emu::Schedule::in_order, emu::Schedule::reversed, emu::Schedule::shuffled};
    OpResult first;
    for (emu::Schedule sc : schedules) {
        emu::set_schedule(sc, 0x5EED);
        const OpResult gpu = run_op(gpu_side(), net, n, true, 0, in);
        if (sc == emu::Schedule::in_order) {
            first = gpu;
            continue;
        }
        EXPECT_TRUE(same_bits(gpu.y, first.y) && same_bits(gpu.aux, first.aux) && same_bits(gpu.dx, first.dx) &&
                    same_bits(gpu.grads, first.grads))
            << "results depend on the order of the blocks or threads";
    }
    expect_close("y", first.y, cpu.y, tol);
    expect_close("aux", first.aux, cpu.aux, tol);
    expect_close("dx", first.dx, cpu.dx, tol);
    expect_close("grads", first.grads, cpu.grads, tol);
    // Masked keys have probability exactly 0 on both sides.
    const int64_t t_steps = l.in.h, e = l.in.c;
    const float *p = first.aux.data() + n * t_steps * 3 * e;
    for (int64_t s = 0; s < n; ++s)
        for (int64_t h = 0; h < l.heads; ++h)
            for (int64_t t = 0; t < t_steps; ++t)
                for (int64_t j = attention_keys(t, lengths.empty() ? t_steps : lengths[size_t(s)], t_steps, l.causal);
                     j < t_steps; ++j)
                    ASSERT_EQ(p[((s * l.heads + h) * t_steps + t) * t_steps + j], 0.0f);
}

TEST(AttentionEmulated, MaskedSoftmax) {
    const uint64_t forward_before = emu::launches_of("attention_softmax_forward_kernel");
    const uint64_t backward_before = emu::launches_of("attention_softmax_backward_kernel");
    check("input seq 5x8; attention heads=2", {}, 1.0f, 1e-5f);
    check("input seq 5x8; attention heads=2", {5, 1, 3}, 1.0f, 1e-5f);
    check("input seq 6x4; attention heads=2 causal", {6, 2, 1, 4}, 1.0f, 1e-5f);
    check("input seq 4x6; attention heads=1", {1, 4}, 1.0f, 1e-5f);
    check("input seq 4x4; attention heads=4 causal", {3, 4}, 1.0f, 1e-5f);
    // One sample: cuBLAS's plain product instead of the batched one.
    check("input seq 4x4; attention heads=2 causal", {3}, 1.0f, 1e-5f);
    // Saturated: inputs x 30 make nearly one-hot rows; x 40, scores far
    // beyond where e^s overflows unless the row's maximum is subtracted.
    check("input seq 5x8; attention heads=2 causal", {5, 2}, 30.0f, 1e-4f);
    check("input seq 7x8; attention heads=2", {7, 3}, 40.0f, 1e-4f);
    // Rows longer than a block's 256 threads.
    check("input seq 260x2; attention heads=1", {260}, 1.0f, 1e-4f);
    EXPECT_GT(emu::launches_of("attention_softmax_forward_kernel"), forward_before);
    EXPECT_GT(emu::launches_of("attention_softmax_backward_kernel"), backward_before);
}

}  // namespace
}  // namespace snn
