// The matrix products' table (see cpu/product_paths.h), the split of a
// product over the threads, and the entry points that go through it.
#include "cpu/product_paths.h"

#ifdef SNN_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <algorithm>

#include "common/error.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm512.h"
#include "cpu/gemm_bf16.h"
#include "cpu/kernel_choice.h"
#include "cpu/sgemm.h"
#include "cpu/thread_pool.h"

namespace snn {
namespace {

// Products below this many multiply-adds cost less in a plain loop than
// packing (OpenBLAS's or snn's); below kParallelGemm one thread does the work.
constexpr int64_t kSmallGemm = 48 * 1024;
constexpr int64_t kParallelGemm = 512 * 1024;
// A product of few rows reads each weight once: it splits over the threads
// (by columns of C) from 128 * 1024 multiply-adds, where B (512 KiB and up)
// no longer fits one core's cache as well as two halves fit two (a batch-1
// 3136 x 128 layer: 21 us on one thread, 9.5 on two).
constexpr int64_t kParallelFewRows = 128 * 1024;
// Up to this many multiply-adds (100^3), OpenBLAS 0.3.21 takes its
// small-matrix kernels where it runs its AVX-512 ones (SkylakeX, Cooperlake),
// and the one for C = A B calls malloc on every call whose row-major N leaves
// 1 to 8 columns past a multiple of 16 (K >= 32). A B keeps such products,
// and such blocks of larger ones split over the threads, on snn's own
// AVX-512 product on every processor that has it; it also spares them the
// packing of snn's sgemm in a build without OpenBLAS.
constexpr int64_t kDirectGemm = 1000 * 1000;

int64_t multiply_adds(const Product &p) { return p.M * p.N * p.K; }

// ---- products split over the threads --------------------------------------

struct SplitJob {
    const Product *p;
    void (*block)(const Product &b);
};

// Each worker computes a block of C: rows when M is the larger side, else
// columns (kept to multiples of 16 floats).
void split_worker(void *ctx, int32_t w, int32_t workers) {
    const SplitJob &j = *static_cast<const SplitJob *>(ctx);
    Product b = *j.p;
    int64_t begin, end;
    if (b.M >= b.N) {
        split_range(b.M, workers, w, &begin, &end);
        if (begin == end) return;
        b.M = end - begin;
        b.A += b.trans_a ? begin : begin * b.lda;
        b.C += begin * b.ldc;
    } else {
        split_range((b.N + 15) / 16, workers, w, &begin, &end);
        begin *= 16;
        end = std::min(end * 16, b.N);
        if (begin >= end) return;
        b.N = end - begin;
        b.B += b.trans_b ? begin * b.ldb : begin;
        b.C += begin;
    }
    j.block(b);
}

// p by block(), split over the threads when it has kParallelGemm
// multiply-adds or more.
void split_product(const Product &p, void (*block)(const Product &b), int64_t parallel = kParallelGemm) {
    SplitJob job{&p, block};
    const int32_t workers = multiply_adds(p) >= parallel ? cpu_threads() : 1;
    parallel_run(workers, split_worker, &job);
}

// ---- the rows ---------------------------------------------------------------

bool bf16_native_eligible(const Product &p) { return p.precision == Precision::bf16 && cpu_has_bf16(); }
void bf16_native_run(const Product &p) {
    gemm_bf16_native(p.trans_a, p.trans_b, p.M, p.N, p.K, p.A, p.lda, p.B, p.ldb, p.C, p.ldc, p.accumulate, p.work);
}

bool bf16_emulated_eligible(const Product &p) { return p.precision == Precision::bf16; }
void bf16_emulated_run(const Product &p) {
    gemm_bf16_emulated(p.trans_a, p.trans_b, p.M, p.N, p.K, p.A, p.lda, p.B, p.ldb, p.C, p.ldc, p.accumulate,
                       p.work);
}

bool gemm512_packed_eligible(const Product &p) { return p.precision == Precision::f32 && p.pack != nullptr; }
void gemm512_packed_run(const Product &p) {
    gemm512(p.trans_a, p.trans_b, p.M, p.N, p.K, p.A, p.lda, p.B, p.ldb, p.C, p.ldc, p.accumulate, p.pack);
}

// Few outputs over long rows (N < 8 with K >= 32) go to dot products instead.
bool small_transposed_eligible(const Product &p) {
    return p.precision == Precision::f32 && !p.trans_a && p.trans_b && multiply_adds(p) <= kSmallGemm &&
           p.scratch != nullptr && p.N * p.K <= kCpuScratchFloats && (p.N >= 8 || p.K < 32);
}
// B^T into scratch, then rows of C as sums of scaled rows of B^T.
void small_transposed_run(const Product &p) {
    small_transpose(p.N, p.K, p.B, p.ldb, p.scratch);
    small_gemm_nn(p.M, p.N, p.K, p.A, p.lda, p.scratch, p.N, p.C, p.ldc, p.accumulate);
}

bool small_eligible(const Product &p) { return p.precision == Precision::f32 && multiply_adds(p) <= kSmallGemm; }
void small_run(const Product &p) {
    if (p.trans_a)
        small_gemm_tn(p.M, p.N, p.K, p.A, p.lda, p.B, p.ldb, p.C, p.ldc, p.accumulate);
    else if (p.trans_b)
        small_gemm_nt(p.M, p.N, p.K, p.A, p.lda, p.B, p.ldb, p.C, p.ldc, p.accumulate);
    else
        small_gemm_nn(p.M, p.N, p.K, p.A, p.lda, p.B, p.ldb, p.C, p.ldc, p.accumulate);
}

// Up to kSgemmFewRows rows of C with A not transposed: snn's unpacked product
// (sgemm_few_rows with the processor's kernel, under the instruction-set cap).
// Any number of rows, kSgemmFewRows at a time (a row of C has the same bits
// in a block of any size).
void few_rows_block(const Product &b) {
    const SgemmKernel kernel = sgemm_kernel();
    for (int64_t i = 0; i < b.M; i += kSgemmFewRows)
        sgemm_few_rows(kernel, b.trans_b, std::min(kSgemmFewRows, b.M - i), b.N, b.K, b.A + i * b.lda, b.lda, b.B,
                       b.ldb, b.C + i * b.ldc, b.ldc, b.accumulate);
}

// Products of up to kSgemmFewRows rows of C (a dense layer's forward product
// at a batch of 1 to 4) go to snn's unpacked product, whatever their size and
// in both builds: with B transposed (the dense layer's A W^T) always, A B
// where snn has no AVX-512 product for it. Below the small loops' size they
// take the small products with B transposed of any number of rows, 4 rows
// at a time, where the caller offers the scratch (the dense layers), which
// the small loops would have filled with B^T on every call: each row of C
// is then summed in the same order whatever the batch, so a smaller batch
// gives the bits of the full one's rows, as the small loops did. Small
// products without scratch (attention's per-head products) keep the small
// loops, whose sums the emulated GPU's products repeat: its near-tie rows
// (scores of the order of E^3) are decided alike on both. They measured (bench/results.md,
// "Issue 39: products of few rows") 3.5 times as fast as OpenBLAS with
// OPENBLAS_CORETYPE=Haswell (the 784-128-64-10 MLP at batch 1: 32.5 against
// 9.3 us; the default CNN 200 against 110), and at most 4% slower than
// OpenBLAS's own AVX-512 choice (784 x 128 at batch 1: 3.9 against 3.75
// us), where the small products' transposition into the scratch cost more
// than the product. The rule takes the shape alone, never the kernels
// OpenBLAS picked: the worst of the two settings is what it minimises. The
// reference kernels keep the paths below.
bool few_rows_eligible(const Product &p) {
    if (p.precision != Precision::f32 || p.trans_a || cpu_reference_kernels()) return false;
    if (multiply_adds(p) <= kSmallGemm) return p.trans_b && p.scratch != nullptr;
    return p.M <= kSgemmFewRows && (p.trans_b || !gemm512_available());
}
void few_rows_run(const Product &p) { split_product(p, few_rows_block, kParallelFewRows); }

#ifdef SNN_HAVE_OPENBLAS
void openblas_block(const Product &b) {
    cblas_sgemm(CblasRowMajor, b.trans_a ? CblasTrans : CblasNoTrans, b.trans_b ? CblasTrans : CblasNoTrans,
                int(b.M), int(b.N), int(b.K), 1.0f, b.A, int(b.lda), b.B, int(b.ldb), b.accumulate ? 1.0f : 0.0f,
                b.C, int(b.ldc));
}
void openblas_direct_block(const Product &b) {
    if (multiply_adds(b) <= kDirectGemm)
        gemm512_nn_direct(b.M, b.N, b.K, b.A, b.lda, b.B, b.ldb, b.C, b.ldc, b.accumulate);
    else
        openblas_block(b);
}

bool openblas_gemm512_eligible(const Product &p) {
    return p.precision == Precision::f32 && !p.trans_a && !p.trans_b && gemm512_available();
}
void openblas_gemm512_run(const Product &p) { split_product(p, openblas_direct_block); }

bool openblas_eligible(const Product &p) { return p.precision == Precision::f32; }
void openblas_run(const Product &p) { split_product(p, openblas_block); }
#else
void builtin_block(const Product &b) {
    sgemm(b.trans_a, b.trans_b, b.M, b.N, b.K, b.A, b.lda, b.B, b.ldb, b.C, b.ldc, b.accumulate);
}
void builtin_direct_block(const Product &b) {
    if (multiply_adds(b) <= kDirectGemm)
        gemm512_nn_direct(b.M, b.N, b.K, b.A, b.lda, b.B, b.ldb, b.C, b.ldc, b.accumulate);
    else
        builtin_block(b);
}

bool builtin_direct_eligible(const Product &p) {
    return p.precision == Precision::f32 && !p.trans_a && !p.trans_b && gemm512_available();
}
void builtin_direct_run(const Product &p) { split_product(p, builtin_direct_block); }

bool builtin_eligible(const Product &p) { return p.precision == Precision::f32; }
void builtin_run(const Product &p) { split_product(p, builtin_block); }
#endif

// Scanned in order; the first eligible row runs the product.
constexpr ProductPathRow kProductPaths[] = {
    {ProductPath::bf16_native, "bf16 native", bf16_native_eligible, bf16_native_run},
    {ProductPath::bf16_emulated, "bf16 emulated", bf16_emulated_eligible, bf16_emulated_run},
    {ProductPath::gemm512_packed, "gemm512 packed", gemm512_packed_eligible, gemm512_packed_run},
    {ProductPath::few_rows, "sgemm few rows, split", few_rows_eligible, few_rows_run},
    {ProductPath::small_transposed, "small loops, B transposed", small_transposed_eligible, small_transposed_run},
    {ProductPath::small, "small loops", small_eligible, small_run},
#ifdef SNN_HAVE_OPENBLAS
    {ProductPath::openblas_gemm512, "OpenBLAS split, gemm512 direct blocks", openblas_gemm512_eligible,
     openblas_gemm512_run},
    {ProductPath::openblas, "OpenBLAS split", openblas_eligible, openblas_run},
#else
    {ProductPath::builtin_direct, "sgemm split, gemm512 direct blocks", builtin_direct_eligible, builtin_direct_run},
    {ProductPath::builtin, "sgemm split", builtin_eligible, builtin_run},
#endif
};

constexpr bool rows_in_enum_order() {
    for (size_t i = 0; i < sizeof(kProductPaths) / sizeof(kProductPaths[0]); ++i)
        if (size_t(kProductPaths[i].path) != i) return false;
    return true;
}
static_assert(rows_in_enum_order(), "kProductPaths lists ProductPath in its order");

// bf16 precision is a request for speed (cpu/kernel_choice.h): a bf16
// product of at most kSgemmFewRows rows of C, or of depth K at most
// kSgemmFewRows, runs as a float32 product (exact float32), on the row the
// table gives it at float32. The bf16 kernel packs both operands and its
// tiles are 8 rows deep, so such products (a dense layer at batches 1 to 4:
// its forward product and input gradient have as many rows as samples, its
// weight gradient as deep) cost more than float32's unpacked ones. Measured
// on one core of a Zen 5 (bench/precision_layers, a dense layer alone,
// bench/results.md "Issue 39: bf16 takes float32 where float32 is faster"),
// float32 time over bf16 time, forward and training step: 3136 x 128 at
// batch 1 0.25 and 0.38, at batch 4 0.41 and 0.68; 784 x 128 0.23, 0.32 and
// 0.44, 0.58; 1024 x 1000 0.24, 0.51 and 0.43, 0.60; 100 x 200 0.41, 1.03
// and 0.49, 0.61; 32 x 10 0.72, 0.72 and 0.87, 0.81; 128 x 10 0.90, 1.03 and
// 1.22, 1.75: float32 loses only on the smallest layers, by 1 us at most.
// From batch 16 bf16 wins on the larger layers (784 x 128 1.95 and 1.58,
// 1024 x 1000 2.72 and 1.20).
// (Not with both operands transposed, which snn's float32 small loops do
// not take and no op asks for.)
bool bf16_runs_f32(const Product &p) {
    return p.precision == Precision::bf16 && (p.M <= kSgemmFewRows || p.K <= kSgemmFewRows) &&
           !(p.trans_a && p.trans_b) && cpu_bf16_rules_apply();
}

ProductPath path_of(const Product &p) {
    for (const ProductPathRow &row : kProductPaths)
        if (row.eligible(p)) return row.path;
    fail(SNN_ERR_INTERNAL, "no product path for precision %s", precision_name(p.precision));
}

// The product as it runs: at float32 when the rule above says so.
Product as_run(const Product &p) {
    Product q = p;
    if (bf16_runs_f32(p)) q.precision = Precision::f32;
    return q;
}

}  // namespace

ProductPath product_path(const Product &p) { return path_of(as_run(p)); }

void run_product(const Product &p) {
    const Product q = as_run(p);
    kProductPaths[size_t(path_of(q))].run(q);
}

const char *product_path_name(ProductPath path) { return kProductPaths[size_t(path)].name; }

void gemm_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
             int64_t ldc, bool accumulate, float *scratch) {
    run_product(Product{Precision::f32, /*trans_a=*/false, /*trans_b=*/true, M, N, K, A, lda, B, ldb, C, ldc,
                        accumulate, /*work=*/nullptr, scratch, /*pack=*/nullptr});
}

void gemm_tn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
             int64_t ldc, bool accumulate) {
    run_product(Product{Precision::f32, /*trans_a=*/true, /*trans_b=*/false, M, N, K, A, lda, B, ldb, C, ldc,
                        accumulate, /*work=*/nullptr, /*scratch=*/nullptr, /*pack=*/nullptr});
}

void gemm_nn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
             int64_t ldc, bool accumulate) {
    run_product(Product{Precision::f32, /*trans_a=*/false, /*trans_b=*/false, M, N, K, A, lda, B, ldb, C, ldc,
                        accumulate, /*work=*/nullptr, /*scratch=*/nullptr, /*pack=*/nullptr});
}

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
               const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, void *work) {
    run_product(Product{Precision::bf16, trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate, work,
                        /*scratch=*/nullptr, /*pack=*/nullptr});
}

void gemm_at(Precision p, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
             const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate, void *work, float *scratch) {
    run_product(Product{p, trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate, work, scratch,
                        /*pack=*/nullptr});
}

}  // namespace snn
