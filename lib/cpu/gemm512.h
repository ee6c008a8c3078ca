// snn's own products where the build has OpenBLAS too: the packed product
// of the convolutions' lowerings, and the direct AVX-512 product of mid-size
// ones.
//
// gemm512 is snn's packed product (cpu/sgemm.h) with the processor's
// micro-kernel and a packing space the caller planned. With OpenBLAS the
// convolutions take it on processors with AVX-512 where OpenBLAS runs
// kernels without it (OPENBLAS_CORETYPE naming an older core, or an OpenBLAS
// that does not know the processor): on an AMD Zen 5 with
// OPENBLAS_CORETYPE=Haswell it made the default CNN's step 1.45x faster on one
// thread (24.9 to 17 ms), about as fast as OpenBLAS's own AVX-512 kernels
// there. Where OpenBLAS runs AVX-512 kernels (SkylakeX, Cooperlake, ...), or
// without AVX-512, or with SNN_CPU_KERNELS=reference, the convolutions keep
// OpenBLAS. Without OpenBLAS they take gemm512 on every processor, but with
// the reference kernels.
//
// C[M][N] (+)= op(A) op(B), row-major, as cpu/sgemm.h lays it out.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace snn {

// True when the convolutions use gemm512. With OpenBLAS: the processor has
// AVX-512 (F) and OpenBLAS runs kernels without it (or
// CpuKernels::fast_gemm512 is chosen, cpu/kernel_choice.h), and the reference
// kernels were not asked for. Without OpenBLAS: the reference kernels were
// not asked for.
bool gemm512_preferred();

// sgemm_pack_floats() (cpu/sgemm.h).
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
// loops and the packed ones, the range where OpenBLAS 0.3.21's own
// small-matrix kernels for AVX-512 processors (SkylakeX, Cooperlake) call
// malloc on every call. Sums over k run in order: deterministic. Without
// x86-64, snn's packed product (sgemm).
void gemm512_nn_direct(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                       float *C, int64_t ldc, bool accumulate);

}  // namespace snn
