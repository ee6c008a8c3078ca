// snn's own packed single-precision matrix product, the products of a build
// without OpenBLAS and the convolutions' packed products (cpu/gemm512.h).
//
// C[M][N] (+)= op(A) op(B), row-major: op(A)[i][k] is A[i*lda + k], or
// A[k*lda + i] when trans_a; op(B)[k][j] is B[k*ldb + j], or B[j*ldb + k]
// when trans_b. The loops of BLIS: blocks of nc columns, of kc depths and of
// mc rows; a kc x nc block of op(B) and an mc x kc block of op(A) are packed
// into micro-panels (NR columns, MR rows, zeros past the edges), then an
// MR x NR micro-kernel builds each tile of C in registers. One micro-kernel,
// written once with vector extensions, runs per instruction set (the rows of
// kSgemmKernels in cpu/sgemm.cpp):
//
//   kernel     tile     vectors                       where
//   avx512     8 x 32   16 floats, fused multiply-add x86-64 with AVX-512 F
//   avx2       6 x 16   8 floats, fused multiply-add  x86-64 with AVX2 and FMA3
//   neon       8 x 12   4 floats, fused multiply-add  aarch64
//   portable   6 x 8    4 floats (SSE2 on x86-64)     everywhere
//
// Each element's sum over k runs in the same order wherever its tile lies
// (blocks of kc in turn, k in order inside a block), so a product split by
// rows or columns of C gives the same values as the whole product with the
// same kernel: results are deterministic.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace snn {

struct CpuFeatures;  // platform/cpu_features.h

enum class SgemmKernel : int32_t {
    avx512,
    avx2,
    neon,
    portable,
};

// The kernel this processor runs: the first eligible row of the table, read
// from cpu_kernel_features() (cpu/cpu_backend.h) on every call.
SgemmKernel sgemm_kernel();
// The kernel a processor with features f runs.
SgemmKernel sgemm_kernel_for(const CpuFeatures &f);

// True when the processor can run kernel k (portable: always), whatever the
// instruction-set cap: the tests run each kernel the processor has.
bool sgemm_kernel_supported(SgemmKernel k);

const char *sgemm_kernel_name(SgemmKernel k);

// The packing space, in floats, that any kernel's product needs.
size_t sgemm_pack_floats();

// C (+)= op(A) op(B) with kernel k (supported) and the caller's packing
// space (sgemm_pack_floats() floats). K == 0 sets C to 0 unless accumulate;
// M == 0 or N == 0 touches nothing. Allocates nothing.
void sgemm_with(SgemmKernel k, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A,
                int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, float *pack);

// The same with sgemm_kernel() and the calling thread's own packing space,
// allocated on the thread's first product and freed when the thread ends.
// Where that memory cannot be had, the product runs in plain loops.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
           const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate);

// Products of up to kSgemmFewRows rows of C read A and B in place, where
// packing B would cost more than the product: C[M][N] (+)= A[M][K] op(B),
// with kernel k's vectors (dot products along K when trans_b, else sums of
// scaled rows of B). Sums run in a fixed order: deterministic.
constexpr int64_t kSgemmFewRows = 4;
void sgemm_few_rows(SgemmKernel k, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                    const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate);

// Gives the calling thread and each of the pool's first threads - 1 threads
// their packing space now (cpu_set_threads calls it), so the training loop
// allocates none.
void sgemm_reserve_threads(int32_t threads);

}  // namespace snn
