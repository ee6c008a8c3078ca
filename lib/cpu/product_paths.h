// The matrix products' paths on the CPU: one ordered table (kProductPaths in
// cpu/product_paths.cpp) of which kernel computes a product for its sizes,
// precision and processor, scanned on every call; the first eligible row
// runs it. gemm_nn, gemm_nt and gemm_tn (cpu/cpu_backend.h), gemm_bf16 and
// gemm_at (cpu/gemm_bf16.h) and the convolutions' lowerings all go through
// it. The choice is not logged: a product has no plan, and its sizes change
// with each call's batch.
#pragma once

#include <stdint.h>

#include "core/backend.h"

namespace snn {

// In the table's order.
enum class ProductPath : int32_t {
    bf16_native,        // bf16 with AVX-512 BF16 (cpu/gemm_bf16.h)
    bf16_emulated,      // bf16: operands rounded into the workspace, the float32 product
    gemm512_packed,     // gemm512 with the packing space the caller planned (cpu/gemm512.h)
    few_rows,           // up to 4 rows of C, A not transposed, B transposed (or no
                        // AVX-512 product), and small A B^T of any rows, 4 at a
                        // time: snn's sgemm_few_rows, unpacked, split over the
                        // threads (not with the reference kernels)
    small_transposed,   // a small A B^T: B^T into the scratch, then the plain loops of A B
    small,              // plain loops on the calling thread (cpu/small_gemm.cpp)
#ifdef SNN_HAVE_OPENBLAS
    openblas_gemm512,   // A B split over the threads, blocks up to 10^6 multiply-adds by
                        // gemm512_nn_direct, larger ones by OpenBLAS
    openblas,           // split over the threads, each block by OpenBLAS
#else
    builtin_direct,     // A B split over the threads, blocks up to 10^6 multiply-adds by
                        // gemm512_nn_direct, larger ones by snn's sgemm (cpu/sgemm.h)
    builtin,            // split over the threads, each block by snn's sgemm
#endif
};

// One product C[M][N] (+)= op(A) op(B), row-major (cpu/gemm_bf16.h has the
// layout), and the memory its caller offers.
struct Product {
    Precision precision;
    bool trans_a;
    bool trans_b;
    int64_t M, N, K;
    const float *A;
    int64_t lda;
    const float *B;
    int64_t ldb;
    float *C;
    int64_t ldc;
    bool accumulate;
    void *work;      // at bf16: gemm_bf16_bytes(M, N, K)
    float *scratch;  // kCpuScratchFloats for a small B^T, or null
    float *pack;     // gemm512_pack_floats() planned by a caller that prefers gemm512, or null
};

struct ProductPathRow {
    ProductPath path;
    const char *name;
    bool (*eligible)(const Product &p);
    void (*run)(const Product &p);
};

// The first eligible row for p: the one run_product runs.
ProductPath product_path(const Product &p);

// Runs p by the first eligible row.
void run_product(const Product &p);

// A row's name, for the plans that log their products.
const char *product_path_name(ProductPath path);

}  // namespace snn
