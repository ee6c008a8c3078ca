// Matrix products at a pass's precision (OpArgs::precision), as autocast
// runs them: at float32 cublasSgemm as always; at bf16 or fp16 both operands
// are first rounded into 16-bit copies in the plan's workspace (a conversion
// kernel running core/math.h's float_to_bf16 / float_to_half), then
// cublasGemmEx multiplies them on the tensor cores with float32
// accumulation into a float32 C. Activations, parameters and gradients stay
// float32; only the operands of products are rounded.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <initializer_list>

#include "cuda_backend.h"

namespace snn {
namespace cu {

// 16-bit values of one operand copy, rounded up to 8 (16 bytes) so that
// every copy carved after it stays aligned for the tensor cores.
constexpr size_t low_values(size_t count) { return (count + 7) & ~size_t(7); }

// Bytes of workspace for 16-bit copies of the given operand sizes at p:
// none at float32.
size_t low_bytes(Precision p, std::initializer_list<size_t> counts);

// Bytes rounded up to 16, so that 16-bit copies may follow float scratch.
constexpr size_t aligned16(size_t bytes) { return (bytes + 15) & ~size_t(15); }

// The 16-bit copies of one call, carved one after another from the
// workspace (at the 16-byte aligned byte offset `at`); at float32 nothing is
// carved and take gives null.
class LowScratch {
public:
    LowScratch(Precision p, void *workspace, size_t at)
        : next_(p == Precision::f32 ? nullptr
                                     : reinterpret_cast<uint16_t *>(static_cast<unsigned char *>(workspace) + at)) {}
    uint16_t *take(size_t count) {
        uint16_t *p = next_;
        if (p) next_ += low_values(count);
        return p;
    }

private:
    uint16_t *next_;
};

// An operand of a product at p: src itself at float32; otherwise its count
// values rounded to p's 16-bit format into copy, which is returned.
const void *operand(CudaStream &cs, Precision p, const float *src, size_t count, uint16_t *copy);

// The operand `values` values past v, an operand at p (floats, or a 16-bit
// copy); null stays null.
inline const void *operand_at(Precision p, const void *v, int64_t values) {
    if (v == nullptr) return nullptr;
    return static_cast<const char *>(v) + values * (p == Precision::f32 ? 4 : 2);
}

// Column-major C (m x n, float32) = alpha op(A) op(B) + beta C, A and B
// operands at p (float, or the 16-bit copies of operand).
void gemm_at(CudaStream &cs, Precision p, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
             int64_t k, float alpha, const void *A, int64_t lda, const void *B, int64_t ldb, float beta, float *C,
             int64_t ldc, const char *what);

// The same for batch products i: A + i stride_a, B + i stride_b,
// C + i stride_c (strides in values).
void gemm_batched_at(CudaStream &cs, Precision p, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                     int64_t n, int64_t k, float alpha, const void *A, int64_t lda, int64_t stride_a, const void *B,
                     int64_t ldb, int64_t stride_b, float beta, float *C, int64_t ldc, int64_t stride_c,
                     int64_t batch, const char *what);

// dst[i] = src[i] rounded to p's 16-bit format, i < n (p not float32).
void to_low(cudaStream_t stream, Precision p, uint16_t *dst, const float *src, size_t n);

}  // namespace cu
}  // namespace snn
