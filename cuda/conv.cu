// The conv op with cuDNN (ops/conv.cpp): NCHW float tensors, weights
// [cout][cin][kh][kw], cross-correlation (what PyTorch and the CPU backend
// compute), then bias and act; for gelu and silu the pre-activation z is
// kept in aux.
//
// The plan makes every descriptor and picks the three algorithms once; the
// workspace it reports covers them and the fallback algorithms at the
// batches fallback_bound asks about. A call with another batch re-sets the two tensor
// descriptors (no allocation) and re-picks the algorithms among those that
// fit the planned workspace, so a call never needs more scratch than was
// planned. The pick is a pure function of the batch, so results do not
// depend on the order of batch sizes.
//
// The ranking the pick walks is cuDNN's heuristic one, or, with the
// environment variable SNN_CUDNN_ALGOS=measure, cuDNN's measured one
// (cudnnFind*Algorithm: every algorithm run once on scratch memory, fastest
// first), measured once per process for each shape, batch and math mode
// and kept, so the repeated layers of a network and later caches measure
// nothing. The filters are the same (deterministic algorithms, the allowed
// math, the workspace bound). A measured pick is stable within a process;
// another process may measure another order and so pick another algorithm,
// whose results differ in the last bits.
//
// At bf16 and fp16 the convolutions are lowered to matrix products instead
// (conv_lowered.h says why) and the plan is only their workspace.
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <tuple>
#include <vector>

#include "conv_lowered.h"
#include "ops.h"

namespace snn {
namespace cu {
namespace {

// Largest workspace a plan accepts for one algorithm; algorithms that
// want more (large FFT variants) are skipped for the next best.
constexpr size_t kWorkspaceCap = size_t(256) << 20;

struct ConvPlan {
    int32_t device = 0;
    bool backward = false;
    bool tf32 = false;
    ConvDims dims{};
    int64_t max_batch = 0;
    int64_t batch = 0;           // the batch descriptors and algorithms are set for
    size_t workspace_bytes = 0;  // planned: no call needs more
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;  // y also describes dy
    cudnnFilterDescriptor_t w = nullptr;
    // One convolution descriptor per direction, each carrying the math type
    // of the algorithm chosen for it.
    cudnnConvolutionDescriptor_t fwd = nullptr, bwd_data = nullptr, bwd_filter = nullptr;
    cudnnConvolutionFwdAlgo_t fwd_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    cudnnConvolutionBwdDataAlgo_t data_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    cudnnConvolutionBwdFilterAlgo_t filter_algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
    size_t fwd_bytes = 0, data_bytes = 0, filter_bytes = 0;
};

int to_int(int64_t v, const char *what) {
    if (v < 0 || v > INT_MAX)
        raise(SNN_ERR_UNSUPPORTED,
              strf("convolution: %s %lld does not fit cuDNN's int", what, (long long)v));
    return static_cast<int>(v);
}

void free_plan(ConvPlan *p) noexcept {
    if (p->x != nullptr) cudnnDestroyTensorDescriptor(p->x);
    if (p->y != nullptr) cudnnDestroyTensorDescriptor(p->y);
    if (p->w != nullptr) cudnnDestroyFilterDescriptor(p->w);
    if (p->fwd != nullptr) cudnnDestroyConvolutionDescriptor(p->fwd);
    if (p->bwd_data != nullptr) cudnnDestroyConvolutionDescriptor(p->bwd_data);
    if (p->bwd_filter != nullptr) cudnnDestroyConvolutionDescriptor(p->bwd_filter);
    delete p;
}

// Math types a plan accepts. Without TF32 only CUDNN_FMA_MATH: plain fp32
// products. With TF32, cuDNN's default math (which permits TF32 tensor
// cores for float data) and tensor-op math, but never
// CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, which may convert float data to
// half precision.
bool math_allowed(cudnnMathType_t math, bool tf32) {
    if (!tf32) return math == CUDNN_FMA_MATH;
    return math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// Walks cuDNN's heuristic ranking (best first) and takes the first algorithm
// that succeeded, is deterministic, uses an allowed math type and whose exact
// workspace for the current descriptors fits `limit`; `fallback` (a
// deterministic FMA algorithm every shape supports) comes last.
// `workspace_of(algo)` sets nothing and asks cuDNN for the workspace size.
template <typename Perf, typename Algo, typename WorkspaceFn>
void choose(const Perf *perf, int count, Algo fallback, bool tf32, size_t limit,
            cudnnConvolutionDescriptor_t conv, WorkspaceFn workspace_of, const char *direction,
            Algo *algo_out, size_t *bytes_out) {
    for (int i = 0; i <= count; ++i) {
        Algo algo = i < count ? perf[i].algo : fallback;
        cudnnMathType_t math = i < count ? perf[i].mathType : CUDNN_FMA_MATH;
        if (i < count && (perf[i].status != CUDNN_STATUS_SUCCESS ||
                          perf[i].determinism != CUDNN_DETERMINISTIC || !math_allowed(math, tf32)))
            continue;
        check(cudnnSetConvolutionMathType(conv, math), "cudnnSetConvolutionMathType");
        size_t bytes = 0;
        cudnnStatus_t status = workspace_of(algo, &bytes);
        if (status != CUDNN_STATUS_SUCCESS) {
            if (i == count) check(status, direction);
            continue;
        }
        if (bytes > limit) {
            if (i == count)
                raise(SNN_ERR_UNSUPPORTED,
                      strf("%s: at this batch the fallback algorithm needs %zu bytes of "
                           "workspace, more than the %zu planned from the batches asked at "
                           "preallocation; use another batch size",
                           direction, bytes, limit));
            continue;
        }
        *algo_out = algo;
        *bytes_out = bytes;
        return;
    }
}

// True when SNN_CUDNN_ALGOS=measure (read once).
bool measure_algorithms() {
    static const bool measure = [] {
        const char *v = std::getenv("SNN_CUDNN_ALGOS");
        return v != nullptr && std::strcmp(v, "measure") == 0;
    }();
    return measure;
}

// cuDNN's measured rankings, per device, shape, batch and math mode.
struct Measured {
    std::vector<cudnnConvolutionFwdAlgoPerf_t> fwd;
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> data;
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> filter;
};
typedef std::tuple<int32_t, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                   int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>
    MeasuredKey;

// The measured rankings for the plan's descriptors as set for batch n
// (measured now when not known yet).
const Measured &measured(ConvPlan &p, cudnnHandle_t dnn, int64_t n, cudnnMathType_t base) {
    static std::mutex mutex;
    static std::map<MeasuredKey, Measured> *known = new std::map<MeasuredKey, Measured>();  // never destroyed
    const ConvDims &d = p.dims;
    const MeasuredKey key(p.device, p.backward, p.tf32, n, d.cin, d.hin, d.win, d.cout, d.hout, d.wout, d.kh,
                          d.kw, d.sh, d.sw, d.ph, d.pw);
    std::lock_guard<std::mutex> lock(mutex);
    auto it = known->find(key);
    if (it != known->end()) return it->second;
    Measured m;
    int got = 0;
    m.fwd.resize(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    check(cudnnSetConvolutionMathType(p.fwd, base), "cudnnSetConvolutionMathType");
    check(cudnnFindConvolutionForwardAlgorithm(dnn, p.x, p.w, p.fwd, p.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                               &got, m.fwd.data()),
          "cudnnFindConvolutionForwardAlgorithm");
    m.fwd.resize(size_t(got));
    if (p.backward) {
        m.data.resize(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
        check(cudnnSetConvolutionMathType(p.bwd_data, base), "cudnnSetConvolutionMathType");
        check(cudnnFindConvolutionBackwardDataAlgorithm(dnn, p.w, p.y, p.bwd_data, p.x,
                                                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got,
                                                        m.data.data()),
              "cudnnFindConvolutionBackwardDataAlgorithm");
        m.data.resize(size_t(got));
        m.filter.resize(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
        check(cudnnSetConvolutionMathType(p.bwd_filter, base), "cudnnSetConvolutionMathType");
        check(cudnnFindConvolutionBackwardFilterAlgorithm(dnn, p.x, p.y, p.bwd_filter, p.w,
                                                          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got,
                                                          m.filter.data()),
              "cudnnFindConvolutionBackwardFilterAlgorithm");
        m.filter.resize(size_t(got));
    }
    return (*known)[key] = std::move(m);
}

void set_descriptors(ConvPlan &p, int64_t n) {
    const ConvDims &d = p.dims;
    check(cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, to_int(n, "batch"),
                                     to_int(d.cin, "channels"), to_int(d.hin, "height"),
                                     to_int(d.win, "width")),
          "cudnnSetTensor4dDescriptor (conv input)");
    check(cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, to_int(n, "batch"),
                                     to_int(d.cout, "channels"), to_int(d.hout, "height"),
                                     to_int(d.wout, "width")),
          "cudnnSetTensor4dDescriptor (conv output)");
}

// The workspace the fallback algorithms need for the descriptors as set.
size_t fallback_bytes(ConvPlan &p, cudnnHandle_t dnn) {
    size_t most = 0, bytes = 0;
    check(cudnnSetConvolutionMathType(p.fwd, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
    check(cudnnGetConvolutionForwardWorkspaceSize(dnn, p.x, p.w, p.fwd, p.y,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &bytes),
          "cudnnGetConvolutionForwardWorkspaceSize (fallback)");
    most = bytes;
    if (p.backward) {
        check(cudnnSetConvolutionMathType(p.bwd_data, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
        check(cudnnGetConvolutionBackwardDataWorkspaceSize(dnn, p.w, p.y, p.bwd_data, p.x,
                                                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, &bytes),
              "cudnnGetConvolutionBackwardDataWorkspaceSize (fallback)");
        if (bytes > most) most = bytes;
        check(cudnnSetConvolutionMathType(p.bwd_filter, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
        check(cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn, p.x, p.y, p.bwd_filter, p.w,
                                                             CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, &bytes),
              "cudnnGetConvolutionBackwardFilterWorkspaceSize (fallback)");
        if (bytes > most) most = bytes;
    }
    return most;
}

// Batches asked one by one; above them, every kBatchStride-th and the last.
constexpr int64_t kExactBatches = 256;
constexpr int64_t kBatchStride = 16;

// The batch asked after n; past max_batch when n is the last.
int64_t next_asked(int64_t n, int64_t max_batch) {
    if (n < kExactBatches || n == max_batch) return n + 1;
    return n + kBatchStride < max_batch ? n + kBatchStride : max_batch;
}

// The most the fallback algorithms need at the batches up to max_batch that
// are asked, planned in so that a call finds an algorithm within the plan.
// cuDNN's workspaces are not monotonic in the batch (a 1x1 filter gradient
// needed 1 KB at batch 257 and 83 KB at 67): they follow how cuDNN splits
// the work, which varies most while a batch holds little work. So every
// batch up to kExactBatches is asked, then every kBatchStride-th and
// max_batch: at max_batch 4096 about 500 batches instead of 4096. The answer
// depends only on the shape, the direction and max_batch, so it is kept per
// process: the repeated layers of a residual network, and every later cache
// of the same shape, ask nothing. A batch left out that needs more than the
// plan fails with SNN_ERR_UNSUPPORTED naming it (choose), never silently.
size_t fallback_bound(ConvPlan &p, cudnnHandle_t dnn) {
    const ConvDims &d = p.dims;
    typedef std::tuple<int32_t, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>
        Key;
    static std::mutex mutex;
    static std::map<Key, size_t> *known = new std::map<Key, size_t>();  // never destroyed
    const Key key(p.device, p.backward, p.max_batch, d.cin, d.hin, d.win, d.cout, d.hout, d.wout,
                  d.kh, d.kw, d.sh, d.sw, d.ph, d.pw);
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = known->find(key);
        if (it != known->end()) return it->second;
    }
    size_t most = 0;
    for (int64_t n = 1; n <= p.max_batch; n = next_asked(n, p.max_batch)) {
        set_descriptors(p, n);
        const size_t bytes = fallback_bytes(p, dnn);
        if (bytes > most) most = bytes;
    }
    std::lock_guard<std::mutex> lock(mutex);
    (*known)[key] = most;
    return most;
}

// Sets the tensor descriptors for batch n and picks the algorithms of every
// direction the plan serves, each within `limit` bytes of workspace. Until
// it succeeds the plan is set for no batch, so a failure is never mistaken
// for a plan set for n (or for the batch before).
void set_batch(ConvPlan &p, cudnnHandle_t dnn, int64_t n, size_t limit) {
    p.batch = 0;
    set_descriptors(p, n);
    // The heuristics are asked under the plan's base math type.
    const cudnnMathType_t base = p.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    int got = 0;
    const Measured *m = measure_algorithms() ? &measured(p, dnn, n, base) : nullptr;

    cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    check(cudnnSetConvolutionMathType(p.fwd, base), "cudnnSetConvolutionMathType");
    if (m != nullptr) {
        got = int(m->fwd.size());
        std::copy(m->fwd.begin(), m->fwd.end(), fwd);
    } else {
        check(cudnnGetConvolutionForwardAlgorithm_v7(dnn, p.x, p.w, p.fwd, p.y,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, fwd),
              "cudnnGetConvolutionForwardAlgorithm_v7");
    }
    choose(
        fwd, got, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, p.tf32, limit, p.fwd,
        [&](cudnnConvolutionFwdAlgo_t algo, size_t *bytes) {
            return cudnnGetConvolutionForwardWorkspaceSize(dnn, p.x, p.w, p.fwd, p.y, algo, bytes);
        },
        "cudnnGetConvolutionForwardWorkspaceSize", &p.fwd_algo, &p.fwd_bytes);

    if (p.backward) {
        cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        check(cudnnSetConvolutionMathType(p.bwd_data, base), "cudnnSetConvolutionMathType");
        if (m != nullptr) {
            got = int(m->data.size());
            std::copy(m->data.begin(), m->data.end(), data);
        } else {
            check(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, p.w, p.y, p.bwd_data, p.x,
                                                              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, data),
                  "cudnnGetConvolutionBackwardDataAlgorithm_v7");
        }
        choose(
            data, got, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, p.tf32, limit, p.bwd_data,
            [&](cudnnConvolutionBwdDataAlgo_t algo, size_t *bytes) {
                return cudnnGetConvolutionBackwardDataWorkspaceSize(dnn, p.w, p.y, p.bwd_data, p.x,
                                                                    algo, bytes);
            },
            "cudnnGetConvolutionBackwardDataWorkspaceSize", &p.data_algo, &p.data_bytes);

        cudnnConvolutionBwdFilterAlgoPerf_t filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        check(cudnnSetConvolutionMathType(p.bwd_filter, base), "cudnnSetConvolutionMathType");
        if (m != nullptr) {
            got = int(m->filter.size());
            std::copy(m->filter.begin(), m->filter.end(), filter);
        } else {
            check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, p.x, p.y, p.bwd_filter, p.w,
                                                                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got,
                                                                filter),
                  "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
        }
        choose(
            filter, got, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, p.tf32, limit, p.bwd_filter,
            [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t *bytes) {
                return cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn, p.x, p.y, p.bwd_filter,
                                                                      p.w, algo, bytes);
            },
            "cudnnGetConvolutionBackwardFilterWorkspaceSize", &p.filter_algo, &p.filter_bytes);
    }
    p.batch = n;
}

void *conv_plan(Backend &be, Stream *s, const Layer &l, int64_t max_batch, bool backward, Precision precision,
                size_t *workspace_bytes) {
    CudaStream &cs = cuda_backend(be).use(s);
    const ConvDims d = conv_dims(l);
    if (max_batch < 1) raise(SNN_ERR_INTERNAL, "conv plan: max_batch < 1");
    if (precision != Precision::f32) {
        *workspace_bytes = conv_lowered_bytes(d, max_batch, backward, precision);
        return nullptr;
    }
    // cuDNN's 4-d descriptors count a tensor's elements in an int.
    for (int64_t per_sample : {d.cin * d.hin * d.win, d.cout * d.hout * d.wout})
        if (per_sample > 0 && max_batch > INT_MAX / per_sample)
            raise(SNN_ERR_UNSUPPORTED,
                  strf("a batch of %lld makes a tensor of %lld x %lld elements, more than the "
                       "2^31 - 1 cuDNN's convolution descriptors hold; on a GPU this layer "
                       "takes batches of at most %lld",
                       (long long)max_batch, (long long)max_batch, (long long)per_sample,
                       (long long)(INT_MAX / per_sample)));
    ConvPlan *p = new (std::nothrow) ConvPlan();
    if (p == nullptr) raise(SNN_ERR_OUT_OF_MEMORY, "conv plan: out of host memory");
    p->device = be.device();
    p->backward = backward;
    p->tf32 = cs.tf32;
    p->dims = d;
    p->max_batch = max_batch;
    try {
        check(cudnnCreateTensorDescriptor(&p->x), "cudnnCreateTensorDescriptor");
        check(cudnnCreateTensorDescriptor(&p->y), "cudnnCreateTensorDescriptor");
        check(cudnnCreateFilterDescriptor(&p->w), "cudnnCreateFilterDescriptor");
        check(cudnnSetFilter4dDescriptor(
                  p->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, to_int(d.cout, "output channels"),
                  to_int(d.cin, "input channels"), to_int(d.kh, "kernel height"),
                  to_int(d.kw, "kernel width")),
              "cudnnSetFilter4dDescriptor");
        for (cudnnConvolutionDescriptor_t *conv : {&p->fwd, &p->bwd_data, &p->bwd_filter}) {
            check(cudnnCreateConvolutionDescriptor(conv), "cudnnCreateConvolutionDescriptor");
            check(cudnnSetConvolution2dDescriptor(*conv, to_int(d.ph, "padding"),
                                                  to_int(d.pw, "padding"), to_int(d.sh, "stride"),
                                                  to_int(d.sw, "stride"), 1, 1,
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                  "cudnnSetConvolution2dDescriptor");
        }
        const size_t fallback = fallback_bound(*p, cs.dnn);
        set_batch(*p, cs.dnn, max_batch, kWorkspaceCap);

        // cuDNN must agree with the engine's shape inference.
        int n = 0, c = 0, h = 0, w = 0;
        check(cudnnGetConvolution2dForwardOutputDim(p->fwd, p->x, p->w, &n, &c, &h, &w),
              "cudnnGetConvolution2dForwardOutputDim");
        if (c != d.cout || h != d.hout || w != d.wout)
            raise(SNN_ERR_INTERNAL,
                  strf("conv plan: cuDNN computes an output of %dx%dx%d, the "
                       "engine %lldx%lldx%lld",
                       c, h, w, (long long)d.cout, (long long)d.hout, (long long)d.wout));

        size_t bytes = p->fwd_bytes;
        if (backward) {
            if (p->data_bytes > bytes) bytes = p->data_bytes;
            if (p->filter_bytes > bytes) bytes = p->filter_bytes;
        }
        // Smaller batches may rank other algorithms first and fall back to
        // the plain ones: plan room for those too.
        if (fallback > bytes) bytes = fallback;
        p->workspace_bytes = bytes;
    } catch (...) {
        free_plan(p);
        throw;
    }
    *workspace_bytes = p->workspace_bytes;
    return p;
}

void conv_plan_release(Backend &, void *plan) noexcept {
    if (plan != nullptr) free_plan(static_cast<ConvPlan *>(plan));
}

// The plan, checked against the call, with descriptors set for batch n.
ConvPlan &prepare(const OpArgs &a, const CudaStream &cs, const ConvDims &d) {
    if (a.plan == nullptr) raise(SNN_ERR_INTERNAL, "convolution called without a plan");
    ConvPlan &p = *static_cast<ConvPlan *>(a.plan);
    if (p.device != a.be->device() || p.dims.cin != d.cin || p.dims.cout != d.cout ||
        p.dims.hin != d.hin || p.dims.win != d.win)
        raise(SNN_ERR_INTERNAL, "convolution called with a plan made for another layer or GPU");
    if (a.n < 1 || a.n > p.max_batch)
        raise(SNN_ERR_INTERNAL, strf("convolution: batch %lld outside the planned 1..%lld",
                                     (long long)a.n, (long long)p.max_batch));
    if (a.n != p.batch) set_batch(p, cs.dnn, a.n, p.workspace_bytes);
    if (a.workspace == nullptr && p.workspace_bytes > 0)
        raise(SNN_ERR_INTERNAL, "convolution called without its workspace");
    return p;
}

// y = act(conv(x, W) + b)
void conv_forward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const ConvDims d = conv_dims(*a.l);
    const float *w = a.params + a.l->weight_offset;
    const float *b = d.bias ? a.params + a.l->bias_offset : nullptr;
    if (a.precision != Precision::f32) {
        conv_lowered_forward(cs, d, a.precision, a.n, a.x[0], w, a.y, a.workspace);
    } else {
        ConvPlan &p = prepare(a, cs, d);
        const float one = 1.0f, zero = 0.0f;
        check(cudnnConvolutionForward(cs.dnn, &one, p.x, a.x[0], p.w, w, p.fwd, p.fwd_algo, a.workspace,
                                      p.fwd_bytes, &zero, p.y, a.y),
              "cudnnConvolutionForward");
    }
    const int64_t hw = d.hout * d.wout;
    float *z = act_uses_input(d.act) ? aux_per_sample(a) : nullptr;
    bias_activation(cs.stream, a.y, z, b, static_cast<size_t>(a.n * d.cout * hw), d.cout, hw,
                    d.act);
}

// dz = dy * act'(y), or act'(z) for gelu and silu (in place), db[c] = sum of
// dz over n, h, w, dW = correlation of x with dz, dx = transposed
// convolution of dz with W.
void conv_backward(const OpArgs &a) {
    CudaStream &cs = stream_of(a);
    const ConvDims d = conv_dims(*a.l);
    const float *w = a.params + a.l->weight_offset;
    float *dw = a.grads + a.l->weight_offset;
    const int64_t hw = d.hout * d.wout;
    const float *v = act_uses_input(d.act) ? aux_per_sample(a) : a.y;
    activation_grad(cs.stream, a.dy, v, static_cast<size_t>(a.n * d.cout * hw), d.act);
    const float *dz = a.dy;
    if (d.bias) channel_sums(cs.stream, cs.sums, a.grads + a.l->bias_offset, dz, a.n, d.cout, hw);
    if (a.precision != Precision::f32) {
        conv_lowered_backward(cs, d, a.precision, a.n, a.x[0], w, dz, dw, a.dx[0], a.workspace);
        return;
    }
    ConvPlan &p = prepare(a, cs, d);
    if (!p.backward) raise(SNN_ERR_INTERNAL, "conv backward with a plan made for inference");
    const float one = 1.0f, zero = 0.0f;
    check(cudnnConvolutionBackwardFilter(cs.dnn, &one, p.x, a.x[0], p.y, dz, p.bwd_filter,
                                         p.filter_algo, a.workspace, p.filter_bytes, &zero, p.w,
                                         dw),
          "cudnnConvolutionBackwardFilter");
    if (a.dx[0] != nullptr)
        check(cudnnConvolutionBackwardData(cs.dnn, &one, p.w, w, p.y, dz, p.bwd_data, p.data_algo,
                                           a.workspace, p.data_bytes, &zero, p.x, a.dx[0]),
              "cudnnConvolutionBackwardData");
}

}  // namespace
}  // namespace cu

extern const OpKernels cuda_op_conv{cu::conv_plan, cu::conv_plan_release, cu::conv_forward,
                                    cu::conv_backward, kAllPrecisions};

}  // namespace snn
