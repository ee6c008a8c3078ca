// The bf16 matrix product of the products' ops at Precision::bf16 (torch's
// autocast rule): C[M][N] (+)= op(A) op(B) with both operands rounded to
// bf16 (round to nearest even, core/math.h float_to_bf16) and the sums in
// float32. A, B and C are float32, row-major: op(A)[i][k] is A[i*lda + k],
// or A[k*lda + i] when trans_a; op(B)[k][j] is B[k*ldb + j], or
// B[j*ldb + k] when trans_b.
//
// Native (cpu_has_bf16(): AVX-512 BF16): the operands are converted while
// they are packed into panels whose k values come in interleaved pairs
// (op(A): panels of 8 rows, op(B): panels of 32 columns), and 8 x 32 tiles
// of C are built with vdpbf16ps, which adds the two products of a pair to a
// float32 sum. As the processor's bf16 instructions do, subnormal operands
// count as zero.
// Emulated (otherwise, or SNN_CPU_KERNELS=reference): op(A) and op(B) are
// rounded to bf16 into the workspace as float32 values and multiplied by the
// float32 product (gemm_nn): the same products, summed in another order.
// Either way the sums over k run in a fixed order for given sizes and do not
// depend on the thread count: results are deterministic.
//
// A product whose operand is used more than once (a recurrent layer's W_hh
// at every step) packs it once: gemm_bf16_pack_a / _pack_b, then
// gemm_bf16_packed per product. Packed operands are in the form the current
// kernel choice reads; pack and multiply within one pass.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"

namespace snn {

// Bytes of a packed op(A) [M][K], of a packed op(B) [K][N], and of the
// workspace of gemm_bf16 (both, each a multiple of 64 bytes).
size_t gemm_bf16_a_bytes(int64_t M, int64_t K);
size_t gemm_bf16_b_bytes(int64_t K, int64_t N);
inline size_t gemm_bf16_bytes(int64_t M, int64_t N, int64_t K) {
    return gemm_bf16_a_bytes(M, K) + gemm_bf16_b_bytes(K, N);
}

void gemm_bf16_pack_a(bool trans_a, int64_t M, int64_t K, const float *A, int64_t lda, void *packed);
void gemm_bf16_pack_b(bool trans_b, int64_t K, int64_t N, const float *B, int64_t ldb, void *packed);
// op(B) given by rows that need not be evenly spaced: rows[k] holds
// op(B)[k][0 .. N), or with trans_b rows[j] holds op(B)[0 .. K)[j] (row j of
// B). A lowering names the shifted rows of an input this way.
void gemm_bf16_pack_b_rows(bool trans_b, int64_t K, int64_t N, const float *const *rows, void *packed);

// C[M][N] (+)= packed op(A) packed op(B). Split over the CPU threads when
// large (run inline when called from a worker).
void gemm_bf16_packed(int64_t M, int64_t N, int64_t K, const void *a, const void *b, float *C, int64_t ldc,
                      bool accumulate);

// Packs both operands into work (gemm_bf16_bytes) and multiplies: the bf16
// rows of the products' table (cpu/product_paths.h) choose between
// gemm_bf16_native and gemm_bf16_emulated, which do that.
void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
               const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, void *work);
void gemm_bf16_native(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                      const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, void *work);
void gemm_bf16_emulated(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                        const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, void *work);

// C (+)= op(A) op(B) at precision p, by the products' table
// (cpu/product_paths.h): gemm_bf16 when p is bf16 (work: gemm_bf16_bytes),
// else the float32 products of cpu/cpu_backend.h (gemm_nn, gemm_nt with
// scratch, gemm_tn; never both transposed).
void gemm_at(Precision p, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
             const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, void *work,
             float *scratch = nullptr);

}  // namespace snn
