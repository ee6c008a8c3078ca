// The CPU backend: matrix products by the table of cpu/product_paths.h
// (OpenBLAS's sgemm where the build has it, else snn's own, cpu/sgemm.h),
// plain loops for the rest. Loops are single-threaded and written to
// vectorise; products use up to snn_get_num_threads() threads and keep small
// ones on one thread.
#pragma once

#include "core/backend.h"
#include "platform/cpu_features.h"

namespace snn {

// Scratch floats per CPU stream, for transposing small weight matrices.
constexpr int64_t kCpuScratchFloats = 16 * 1024;

struct CpuStream final : Stream {
    alignas(64) float scratch[kCpuScratchFloats];
};

inline float *scratch_of(Stream *s) { return static_cast<CpuStream *>(s)->scratch; }

class CpuBackend final : public Backend {
public:
    int32_t device() const override { return -1; }
    const char *name() const override;

    void *alloc(size_t bytes) override;
    void release(void *p) noexcept override;
    Stream *create_stream(size_t staging_bytes, bool allow_tf32) override;
    void destroy_stream(Stream *s) noexcept override;
    void wait(Stream *, Stream *) override {}
    void mark(Stream *) override {}
    void wait_mark(Stream *, Stream *) override {}
    void synchronize(Stream *) override {}
    void upload(Stream *s, void *dst, const void *src_host, size_t bytes) override;
    void download(Stream *s, void *dst_host, const void *src, size_t bytes) override;
    void copy(Stream *s, void *dst, const void *src, size_t bytes) override;
    void copy_from_caller(Stream *s, void *dst, const void *src, size_t bytes) override {
        copy(s, dst, src, bytes);
    }
    void gather_upload(Stream *s, void *dst, const void *src_host, const int64_t *idx, size_t n,
                       size_t row_bytes) override;
    void gather_device(Stream *s, void *dst, const void *src, const int64_t *idx_host, size_t n,
                       size_t row_bytes) override;
    void fill(Stream *s, float *dst, float value, size_t n) override;
    bool all_finite(Stream *s, const float *x, size_t n) override;

    void scale(Stream *s, float *x, float factor, size_t n) override;
    void add(Stream *s, float *dst, const float *src, size_t n) override;
    PrecisionSupport precision_support(Precision p, const char **why) const override;
    void copy2d(Stream *s, void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes,
                size_t rows) override;
    const OpKernels *kernels(OpKind kind) const override;

    LossKernel loss_kernel(LossKind kind) const override;
    void optimiser_step(Stream *s, OptKind kind, const OptStep &step, size_t count, float *params,
                        const float *grads, float *m, float *v, double *norm) override;
};

// C = op(A) op(B) (+ C when accumulate), row-major, the three shapes the
// layers need, by the products' table (cpu/product_paths.h): small products
// run in plain loops on the calling thread; larger ones go to OpenBLAS.
//   gemm_nt: C[M][N] = A[M][K] B[N][K]^T   (scratch: kCpuScratchFloats, or null)
//   gemm_tn: C[M][N] = A[K][M]^T B[K][N]
//   gemm_nn: C[M][N] = A[M][K] B[K][N]
void gemm_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
             int64_t ldb, float *C, int64_t ldc, bool accumulate, float *scratch = nullptr);
void gemm_tn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
             int64_t ldb, float *C, int64_t ldc, bool accumulate);
void gemm_nn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
             int64_t ldb, float *C, int64_t ldc, bool accumulate);

// Plain-loop kernels for small products (cpu/small_gemm.cpp), compiled for
// AVX2 and for the baseline, chosen at load time.
void small_gemm_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                   int64_t ldb, float *C, int64_t ldc, bool accumulate);
void small_gemm_tn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                   int64_t ldb, float *C, int64_t ldc, bool accumulate);
void small_gemm_nn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                   int64_t ldb, float *C, int64_t ldc, bool accumulate);
// dst[K][N] = src[N][K]^T
void small_transpose(int64_t N, int64_t K, const float *src, int64_t ld, float *dst);

// True when the environment sets SNN_CPU_KERNELS=reference: the CPU ops then
// take their plain reference paths (im2col convolution, generic pooling)
// instead of the fast ones for common shapes. The tests compare the two; a
// user can rule a fast path out when a result looks wrong. Convolutions read
// it when a cache is made, pooling on every call.
bool cpu_reference_kernels();

// True when bf16 products run natively: the processor has AVX-512 BF16
// (vdpbf16ps) and the reference kernels were not asked for. Otherwise bf16
// is emulated (operands rounded to bf16, float32 products).
bool cpu_has_bf16();

// The processor's features as the CPU kernels see them: cpu_features()
// (platform/cpu_features.h) without those above the instruction-set cap
// (SNN_CPU_ISA, or SNN_CPU_KERNELS=avx2: cpu/kernel_choice.h). Every choice
// of a kernel by instruction set asks this, never cpu_features(). Read on
// every call.
const CpuFeatures &cpu_kernel_features();

// Sets the CPU thread bound: grows the pool, gives each thread its packing
// space for snn's product (cpu/sgemm.h) and keeps OpenBLAS single-threaded.
void cpu_set_threads(int32_t n);

}  // namespace snn
