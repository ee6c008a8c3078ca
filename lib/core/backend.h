// The backend seam: everything the engine asks of a device besides the ops'
// kernels (ops/op.h), which each backend lists in its kernels() table. The CPU backend
// (lib/cpu) implements it with OpenBLAS and loops; the CUDA plugin (cuda/)
// with cuBLAS, cuDNN and kernels. The engine never asks which one it has.
//
// Conventions for every method:
//  - pointers named x, y, w, b, dy, dx, dw, db, params, grads, ... are device
//    pointers of this backend; pointers named *_host are host memory;
//  - every operation is ordered on the given Stream and may return before it
//    completes (except download and all_finite, which wait);
//  - failures throw snn::Error (status + message); nothing allocates memory
//    after preallocation except alloc/create_stream/*_plan.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/losses.h"
#include "core/math.h"
#include "core/optimisers.h"
#include "core/op_list.h"

namespace snn {

struct OpKernels;

// The precision of a pass's matrix products (snn_precision): parameters,
// optimiser state, activations and gradients stay float32; dense,
// convolution, attention and recurrent products round their operands to
// bf16 or fp16 and accumulate in float32 (torch.autocast's rule).
enum class Precision : int32_t { f32 = 0, bf16 = 1, f16 = 2 };
constexpr int kPrecisionCount = 3;
const char *precision_name(Precision p);  // "float32", "bf16", "fp16"

// How a backend runs a precision: not at all, with the same values but
// without the speed (operands rounded, float32 products), or natively.
enum class PrecisionSupport : int32_t { none = 0, emulated = 1, native = 2 };

struct DenseDims {
    int64_t in, out;
    bool bias;
    Act act;
};

struct ConvDims {
    int64_t cin, hin, win;    // input channels, rows, columns
    int64_t cout, hout, wout; // output
    int64_t kh, kw, sh, sw, ph, pw;
    bool bias;
    Act act;
};

struct PoolDims {
    int64_t c, hin, win, hout, wout, kh, kw, sh, sw;
};

// A per-cache execution context: on CUDA a stream with its cuBLAS/cuDNN
// handles, an event and a pinned staging buffer; on the CPU nothing.
class Stream {
public:
    virtual ~Stream() = default;
};

class Backend {
public:
    virtual ~Backend() = default;

    // SNN_DEVICE_CPU or the GPU index.
    virtual int32_t device() const = 0;
    // Short description for logs, e.g. "cpu (OpenBLAS SkylakeX)".
    virtual const char *name() const = 0;

    // ---- memory and ordering -------------------------------------------
    virtual void *alloc(size_t bytes) = 0;  // zero bytes gives a valid unique pointer or nullptr
    virtual void release(void *p) noexcept = 0;
    // staging_bytes: the most a single upload/gather_upload will copy.
    // allow_tf32: dense and conv math on this stream may use TF32.
    virtual Stream *create_stream(size_t staging_bytes, bool allow_tf32) = 0;
    virtual void destroy_stream(Stream *s) noexcept = 0;
    // Work queued on `waiter` after this call starts only after all work
    // queued so far on `producer` finished (no host synchronisation).
    virtual void wait(Stream *waiter, Stream *producer) = 0;
    // Marks the point after the work queued so far on `s`; wait_mark makes
    // work queued on `waiter` afterwards start only after `marked`'s last
    // mark (nothing to wait for before the first). Unlike wait, it leaves
    // out what `marked` queued after its mark.
    virtual void mark(Stream *s) = 0;
    virtual void wait_mark(Stream *waiter, Stream *marked) = 0;
    virtual void synchronize(Stream *s) = 0;
    // The host buffer may be reused as soon as upload returns. Uploads larger
    // than the stream's staging buffer may be synchronous.
    virtual void upload(Stream *s, void *dst, const void *src_host, size_t bytes) = 0;
    // Waits for the stream, then copies to the host.
    virtual void download(Stream *s, void *dst_host, const void *src, size_t bytes) = 0;
    virtual void copy(Stream *s, void *dst, const void *src, size_t bytes) = 0;
    // Copies from memory the caller's own code writes (on a GPU any CUDA
    // allocation): ordered after the work the calling thread queued so far on
    // this device's default streams (legacy and per-thread), and complete
    // when it returns, so the caller may overwrite or free src at once.
    virtual void copy_from_caller(Stream *s, void *dst, const void *src, size_t bytes) = 0;
    // dst row i = src_host row idx[i], rows of row_bytes bytes (indices
    // already validated by the caller).
    virtual void gather_upload(Stream *s, void *dst, const void *src_host, const int64_t *idx,
                               size_t n, size_t row_bytes) = 0;
    // dst row i = src row idx_host[i], src a device buffer of this backend
    // (indices validated by the caller; on a GPU they travel through the
    // stream's staging buffer).
    virtual void gather_device(Stream *s, void *dst, const void *src, const int64_t *idx_host,
                               size_t n, size_t row_bytes) = 0;
    virtual void fill(Stream *s, float *dst, float value, size_t n) = 0;
    // Waits for the stream; true when every x[i] is finite.
    virtual bool all_finite(Stream *s, const float *x, size_t n) = 0;

    // x[i] *= factor
    virtual void scale(Stream *s, float *x, float factor, size_t n) = 0;
    // dst[i] += src[i]
    virtual void add(Stream *s, float *dst, const float *src, size_t n) = 0;
    // rows rows of row_bytes bytes: dst + r * dst_pitch <- src + r * src_pitch
    virtual void copy2d(Stream *s, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                        size_t row_bytes, size_t rows) = 0;

    // How this backend runs precision p; *why (when not null) receives the
    // reason when it is not native.
    virtual PrecisionSupport precision_support(Precision p, const char **why) const = 0;

    // ---- ops --------------------------------------------------------------
    // This backend's kernels of an op, or null when it lacks the op (the
    // supports query: a model refuses to move to a backend lacking one of
    // its ops). Ops with generic kernels (ops/op.h) are not asked for.
    virtual const OpKernels *kernels(OpKind kind) const = 0;

    // ---- losses (core/losses.h) -----------------------------------------
    // This backend's kernel of a loss; every backend has every loss.
    virtual LossKernel loss_kernel(LossKind kind) const = 0;

    // ---- optimisers: one fused pass over `count` parameters ---------------
    // m and v are the optimiser state (v unused by SGD; m unused by RMSProp).
    // norm is null unless the step clips by the gradient norm
    // (step.max_grad_norm > 0); then it is device memory of kGradNormDoubles
    // doubles (core/optimisers.h): the backend first writes the L2 norm of
    // the whole gradient to norm[0] in one deterministic pass, and the update
    // reads it there and scales g by clip_coefficient (math.h), on the
    // device. grads itself is never changed.
    virtual void optimiser_step(Stream *s, OptKind kind, const OptStep &step, size_t count,
                                float *params, const float *grads, float *m, float *v,
                                double *norm) = 0;
};

}  // namespace snn
