// The recurrent ops' CUDA code (cuda/recurrent.cuh with the gate kernels
// of cuda/lstm.cu and cuda/gru.cu) compiled for the host, run through
// their kernel tables against the emulated runtime (its cublasSgemm_64 is
// plain loops) and compared with the CPU backend: forward (output and kept
// values) and backward (input and parameter gradients), with and without
// lengths (1 and T in one batch), both directions, last, no biases, and
// saturated gates. Each run is repeated under the three schedules of a
// block's threads, which must give the same bits. The products add in
// another order than OpenBLAS, hence the tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "cpu/cpu_backend.h"
#include "cuda_backend.h"
#include "model/spec.h"
#include "ops/op.h"

namespace snn {
namespace {

using Floats = std::vector<float>;
using Lengths = std::vector<int32_t>;

[[noreturn]] void throw_error(snn_status status, const char *message) { throw Error(status, message); }
void ignore_log(int32_t, const char *) {}

Backend &emulated_gpu() {
    static Backend *be = [] {
        cu::set_host(throw_error, ignore_log);
        return new cu::CudaBackend(0);
    }();
    return *be;
}

Backend &cpu() {
    static CpuBackend be;
    return be;
}

// Memory of one backend, from and to host vectors.
template <typename T>
class Buffer {
public:
    Buffer(Backend &be, Stream *s, const std::vector<T> &host) : be_(be), s_(s), count_(host.size()) {
        p_ = static_cast<T *>(be.alloc(count_ * sizeof(T)));
        if (count_) be.upload(s, p_, host.data(), count_ * sizeof(T));
    }
    ~Buffer() { be_.release(p_); }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    T *get() const { return p_; }
    std::vector<T> read() const {
        std::vector<T> host(count_);
        if (count_) be_.download(s_, host.data(), p_, count_ * sizeof(T));
        return host;
    }

private:
    Backend &be_;
    Stream *s_;
    size_t count_;
    T *p_ = nullptr;
};

struct Inputs {
    Floats x, params, dy;
    Lengths lengths;  // empty: every sample has T steps
};

struct Result {
    Floats y, aux, dx, grads;
};

// Forward then backward of node 1 on `be`, every output starting NaN.
Result run(Backend &be, const Network &net, int64_t n, const Inputs &in) {
    const Layer &l = net.layers[1];
    const OpKernels *k = op_kernels(be, l.kind);
    EXPECT_NE(k, nullptr);
    if (!k) return {};
    Stream *s = be.create_stream(0, false);
    const float nan = std::nanf("");
    Result r;
    {
        Buffer<float> x(be, s, in.x), params(be, s, in.params), dy(be, s, in.dy);
        Buffer<float> y(be, s, Floats(size_t(n * l.out.size()), nan));
        Buffer<float> aux(be, s, Floats(l.aux_fixed + size_t(n) * l.aux_per_sample, nan));
        Buffer<float> dx(be, s, Floats(in.x.size(), nan)), grads(be, s, Floats(in.params.size(), nan));
        Buffer<int32_t> lengths(be, s, in.lengths);
        size_t bytes = 0;
        void *plan = k->plan ? k->plan(be, s, l, n, true, &bytes) : nullptr;
        void *workspace = be.alloc(bytes);
        OpArgs a;
        a.be = &be;
        a.s = s;
        a.l = &l;
        a.plan = plan;
        a.workspace = workspace;
        a.n = n;
        a.lengths = in.lengths.empty() ? nullptr : lengths.get();
        a.x[0] = x.get();
        a.y = y.get();
        a.params = params.get();
        a.aux = aux.get();
        k->forward(a);
        r.y = y.read();
        r.aux = aux.read();
        a.dy = dy.get();
        a.dx[0] = dx.get();
        a.grads = grads.get();
        k->backward(a);
        r.dx = dx.read();
        r.grads = grads.read();
        be.release(workspace);
        if (k->release) k->release(be, plan);
    }
    be.destroy_stream(s);
    return r;
}

Floats uniform(size_t n, uint64_t seed, float lo, float hi) {
    std::mt19937_64 random(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    Floats v(n);
    for (float &x : v) x = dist(random);
    return v;
}

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
    Inputs in;
    in.x = uniform(size_t(n * l.in.size()), seed, -scale, scale);
    in.params = uniform(net.param_count, seed + 1, -scale, scale);
    in.dy = uniform(size_t(n * l.out.size()), seed + 2, -1.0f, 1.0f);
    in.lengths = lengths;
    const Result c = run(cpu(), net, n, in);
    Result first;
    for (emu::Schedule schedule : {emu::Schedule::in_order, emu::Schedule::reversed, emu::Schedule::shuffled}) {
        emu::set_schedule(schedule, 0x5EED);
        const Result g = run(emulated_gpu(), net, n, in);
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
    for (size_t i = 0; i < kernels.size(); ++i)
        EXPECT_GT(emu::launches_of(kernels[i].c_str()), before[i]) << kernels[i] << " never ran";
}

TEST(Recurrent, Lstm) { check_op("lstm", {"lstm_forward_kernel", "lstm_backward_kernel"}); }
TEST(Recurrent, Gru) { check_op("gru", {"gru_forward_kernel", "gru_backward_kernel"}); }

}  // namespace
}  // namespace snn
