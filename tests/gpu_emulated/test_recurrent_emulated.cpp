// The recurrent ops' CUDA code (cuda/recurrent.cuh with the gate kernels
// of cuda/lstm.cu and cuda/gru.cu) compiled for the host, run through
// their kernel tables against the emulated runtime (its cublasSgemm_64 is
// plain loops) and compared with the CPU backend: forward (output and kept
// values) and backward (input and parameter gradients), with and without
// lengths (1 and T in one batch), both directions, last, no biases, and
// saturated gates. Each run is repeated under the three schedules of the
// blocks and threads, which must give the same bits. The products add in
// another order than OpenBLAS, hence the tolerances.
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

using Lengths = std::vector<int32_t>;

// |gpu - cpu| <= tol max(1, |cpu|) everywhere, and nothing left unwritten
// (NaN); tol 0: the same bits.
void expect_close(const std::string &what, const Floats &gpu, const Floats &cpu, float tol) {
    ASSERT_EQ(gpu.size(), cpu.size()) << what;
    size_t bad = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const float g = gpu[i], c = cpu[i];
        const bool ok = !std::isnan(g) && !std::isnan(c) &&
                        (tol == 0.0f ? std::memcmp(&g, &c, sizeof g) == 0
                                     : std::fabs(g - c) <= tol * std::fmax(1.0f, std::fabs(c)));
        if (!ok && bad++ < 5) ADD_FAILURE() << what << "[" << i << "]: emulated GPU " << g << ", CPU " << c;
    }
    if (bad > 5) ADD_FAILURE() << what << ": " << bad << " values differ in all";
}

void check(const std::string &spec, int64_t n, const Lengths &lengths, float scale) {
    const Network net = parse_spec(spec);
    const Layer &l = net.layers[1];
    const std::string what = "\"" + spec + "\" batch " + std::to_string(n) + (lengths.empty() ? "" : " with lengths") +
                             " scale " + std::to_string(scale);
    SCOPED_TRACE(what);
    const uint64_t seed = std::hash<std::string>()(what);
    OpInputs in;
    in.x = uniform(size_t(n * l.in.size()), seed, -scale, scale);
    in.params = uniform(net.param_count, seed + 1, -scale, scale);
    in.dy = uniform(size_t(n * l.out.size()), seed + 2, -1.0f, 1.0f);
    in.lengths = lengths;
    const OpResult c = run_op(cpu_side(), net, n, true, 0, in);
    OpResult first;
    for (emu::Schedule schedule : {emu::Schedule::in_order, emu::Schedule::reversed, emu::Schedule::shuffled}) {
        emu::set_schedule(schedule, 0x5EED);
        const OpResult g = run_op(gpu_side(), net, n, true, 0, in);
        if (schedule == emu::Schedule::in_order) {
            first = g;
            continue;
        }
        expect_close(what + " y against in order", g.y, first.y, 0.0f);
        expect_close(what + " aux against in order", g.aux, first.aux, 0.0f);
        expect_close(what + " dx against in order", g.dx, first.dx, 0.0f);
        expect_close(what + " grads against in order", g.grads, first.grads, 0.0f);
    }
    expect_close(what + " y", first.y, c.y, 1e-5f);
    expect_close(what + " aux", first.aux, c.aux, 1e-5f);
    expect_close(what + " dx", first.dx, c.dx, 1e-4f);
    expect_close(what + " grads", first.grads, c.grads, 1e-4f);
    // Padded steps of the sequence output are 0 on both.
    if (!l.last && !lengths.empty())
        for (int64_t s = 0; s < n; ++s)
            for (int64_t t = lengths[size_t(s)]; t < l.in.h; ++t)
                for (int64_t f = 0; f < l.out.c; ++f) {
                    const size_t i = size_t((s * l.in.h + t) * l.out.c + f);
                    EXPECT_EQ(first.y[i], 0.0f) << what << " y at padded step " << t << " of sample " << s;
                    EXPECT_EQ(c.y[i], 0.0f) << what << " y at padded step " << t << " of sample " << s;
                }
}

void check_op(const char *op, const std::vector<std::string> &kernels) {
    std::vector<uint64_t> before;
    for (const std::string &k : kernels) before.push_back(emu::launches_of(k.c_str()));
    const Lengths mixed = {6, 1, 4, 6, 2};
    for (const char *options : {"", " bidirectional", " bidirectional last", " last nobias"})
        for (const Lengths &lengths : {Lengths(), mixed})
            for (float scale : {1.0f, 12.0f})
                check(std::string("input seq 6x3; ") + op + " 5" + options, 5, lengths, scale);
    check(std::string("input seq 1x4; ") + op + " 3 bidirectional", 2, {}, 1.0f);
    // More gate rows (batch x units) than the emulated grid's threads: the
    // grid-stride loops go round.
    check(std::string("input seq 3x4; ") + op + " 257", 4, {3, 1, 2, 3}, 0.5f);
    for (size_t i = 0; i < kernels.size(); ++i)
        EXPECT_GT(emu::launches_of(kernels[i].c_str()), before[i]) << kernels[i] << " never ran";
}

TEST(Recurrent, Lstm) { check_op("lstm", {"lstm_forward_kernel", "lstm_backward_kernel"}); }
TEST(Recurrent, Gru) { check_op("gru", {"gru_forward_kernel", "gru_backward_kernel"}); }

}  // namespace
}  // namespace snn
