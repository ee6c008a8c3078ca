// What the gpu-emulated tests share: the two backends compared (the CPU's
// and the CUDA plugin's on the emulated runtime), memory of either from and
// to host vectors, random inputs, and one node run forward and backward
// through its op's kernel table.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/error.h"
#include "cpu/cpu_backend.h"
#include "cuda_backend.h"
#include "ops/spec.h"
#include "ops/op.h"

namespace snn::emulated {

using Floats = std::vector<float>;

[[noreturn]] inline void throw_error(snn_status status, const char *message) { throw Error(status, message); }
inline void ignore_log(int32_t, const char *) {}

// One backend with a stream of its own.
struct Side {
    Backend *be;
    Stream *s;
};

inline Side cpu_side() {
    static CpuBackend be;
    static Stream *s = be.create_stream(0, false);
    return {&be, s};
}

inline Side gpu_side() {
    static cu::CudaBackend *be = [] {
        cu::set_host(throw_error, ignore_log);
        return new cu::CudaBackend(0);
    }();
    static Stream *s = be->create_stream(0, false);
    return {be, s};
}

// Memory of one side, uploaded from and downloaded to host vectors.
template <typename T>
class Buffer {
public:
    Buffer(Side side, const std::vector<T> &host) : side_(side), count_(host.size()) {
        p_ = static_cast<T *>(side.be->alloc(bytes()));
        if (count_ > 0) side.be->upload(side.s, p_, host.data(), bytes());
    }
    ~Buffer() { side_.be->release(p_); }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;

    T *get() const { return p_; }
    std::vector<T> read() const {
        std::vector<T> host(count_);
        if (count_ > 0) side_.be->download(side_.s, host.data(), p_, bytes());
        return host;
    }

private:
    size_t bytes() const { return count_ * sizeof(T); }
    Side side_;
    size_t count_;
    T *p_ = nullptr;
};

// n values uniform in [lo, hi), from seed.
inline Floats uniform(size_t n, uint64_t seed, float lo = -3.0f, float hi = 3.0f) {
    std::mt19937_64 random(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    Floats v(n);
    for (float &x : v) x = dist(random);
    return v;
}

inline Floats nans(size_t n) { return Floats(n, std::nanf("")); }

struct OpInputs {
    Floats x, params, state, dy;
    std::vector<int32_t> lengths;  // valid steps per sample, or empty for all
};

struct OpResult {
    Floats y, aux, state, dx, grads;
};

// Forward then backward of node 1 of `net` on one side, every output
// starting as NaN; y, aux and state are read after the forward pass.
inline OpResult run_op(Side side, const Network &net, int64_t n, bool training, uint64_t key, const OpInputs &in,
                       Precision precision = Precision::f32) {
    const Layer &l = net.layers[1];
    const OpKernels *k = op_kernels(*side.be, l.kind);
    EXPECT_NE(k, nullptr);
    if (k == nullptr) return {};
    const size_t out = static_cast<size_t>(n * l.out.size());
    const size_t aux = l.aux_fixed + static_cast<size_t>(n) * l.aux_per_sample;
    Buffer<float> x(side, in.x), params(side, in.params), state(side, in.state), dy(side, in.dy);
    Buffer<float> y(side, nans(out)), aux_buf(side, nans(aux)), dx(side, nans(in.x.size()));
    Buffer<float> grads(side, nans(in.params.size()));
    Buffer<int32_t> lengths(side, in.lengths);
    size_t workspace_bytes = 0;
    void *plan = k->plan ? k->plan(*side.be, side.s, l, n, true, precision, &workspace_bytes) : nullptr;
    void *workspace = side.be->alloc(workspace_bytes);
    OpArgs a;
    a.be = side.be;
    a.s = side.s;
    a.l = &l;
    a.plan = plan;
    a.workspace = workspace;
    a.n = n;
    a.training = training;
    a.precision = precision;
    a.key = key;
    a.lengths = in.lengths.empty() ? nullptr : lengths.get();
    a.x[0] = x.get();
    a.y = y.get();
    a.params = params.get();
    a.state = state.get();
    a.aux = aux_buf.get();
    k->forward(a);
    OpResult r;
    r.y = y.read();
    r.aux = aux_buf.read();
    r.state = state.read();
    a.dy = dy.get();
    a.dx[0] = dx.get();
    a.grads = grads.get();
    k->backward(a);
    r.dx = dx.read();
    r.grads = grads.read();
    side.be->release(workspace);
    if (k->release) k->release(*side.be, plan);
    return r;
}

}  // namespace snn::emulated
