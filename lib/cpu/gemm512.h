// A blocked single-precision matrix product with AVX-512 (16-float vectors),
// for the convolutions' products on processors with AVX-512 where OpenBLAS
// runs kernels without it (OPENBLAS_CORETYPE naming an older core, or an
// OpenBLAS that does not know the processor): on an AMD Zen 5 with
// OPENBLAS_CORETYPE=Haswell it made the default CNN's step 1.45x faster on one
// thread (24.9 to 17 ms), about as fast as OpenBLAS's own AVX-512 kernels there. Where OpenBLAS runs
// AVX-512 kernels (SkylakeX, Cooperlake, ...), or without AVX-512, or with
// SNN_CPU_KERNELS=reference, the convolutions keep OpenBLAS.
//
// C[M][N] (+)= op(A) op(B), row-major: op(A)[i][k] is A[i*lda + k], or
// A[k*lda + i] when trans_a; op(B)[k][j] is B[k*ldb + j], or B[j*ldb + k]
// when trans_b. Blocks of op(B) (kGemmKc x kGemmNc) and of op(A)
// (kGemmMc x kGemmKc) are packed into `pack` (gemm512_pack_floats() floats),
// then 8 x 32 tiles of C are built in registers. The sums over k run in a
// fixed order for given sizes, so results are deterministic.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace snn {

// True when the processor has AVX-512 (F) and OpenBLAS runs kernels without
// it (or CpuKernels::fast_gemm512 is chosen, cpu/kernel_choice.h), and the
// reference kernels were not asked for: then the convolutions use gemm512.
bool gemm512_preferred();

size_t gemm512_pack_floats();

void gemm512(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
             const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, float *pack);

// True when the processor has AVX-512 (F) and the reference kernels were
// not asked for: gemm512_nn_direct may run.
bool gemm512_available();

// C[M][N] (+)= A[M][K] B[K][N], row-major, read in place: no packing and no
// workspace. Tiles of C (8 x 32, or 4 x 64 and 2 x 64 for the last rows) are
// built in registers from rows of B (loaded under a mask at the right edge)
// and broadcast elements of A; a tile with rows to spare repeats A's last
// row and stores only the rows that exist. For
// products too small to repay packing: gemm_nn's products between its plain
// loops and OpenBLAS's blocked path, the range where OpenBLAS 0.3.21's own
// small-matrix kernels for AVX-512 processors (SkylakeX, Cooperlake) call
// malloc on every call. Sums over k run in order: deterministic.
void gemm512_nn_direct(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                       float *C, int64_t ldc, bool accumulate);

}  // namespace snn
