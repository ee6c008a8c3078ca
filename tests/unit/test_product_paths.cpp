// The products' table (cpu/product_paths.h): which row takes a product of
// few rows, at each instruction-set cap, and the values of every row these
// shapes reach against a double-precision product: M = 1 to 7 (the few-rows
// row takes up to kSgemmFewRows, the rest go on down the table), N and K
// off every kernel's vector and tile widths, B transposed or not, with and
// without accumulation, on 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/gemm512.h"
#include "cpu/kernel_choice.h"
#include "cpu/product_paths.h"
#include "cpu/sgemm.h"
#include "helpers.h"
#include "snn.h"

#include "lcg.h"

namespace {

using snn::Precision;
using snn::Product;
using snn::ProductPath;

constexpr ProductPath kFewRows = ProductPath::few_rows;
#ifdef SNN_HAVE_OPENBLAS
constexpr ProductPath kDirect = ProductPath::openblas_gemm512;
constexpr ProductPath kSplit = ProductPath::openblas;
#else
constexpr ProductPath kDirect = ProductPath::builtin_direct;
constexpr ProductPath kSplit = ProductPath::builtin;
#endif

using snn_test::Lcg;

// A[M][K] and op(B)[K][N] with strides wider than their rows, and a C of
// N + 3 columns whose last three must stay as they were.
struct Operands {
    bool tb;
    int64_t M, N, K, lda, ldb, ldc;
    std::vector<float> A, B, C0;
    std::vector<double> product, magnitude;

    Operands(bool tb_, int64_t M_, int64_t N_, int64_t K_) : tb(tb_), M(M_), N(N_), K(K_) {
        lda = K + 3;
        ldb = (tb ? K : N) + 5;
        ldc = N + 3;
        Lcg r{uint64_t(M * 1000003 + N * 1009 + K * 7 + tb)};
        A.resize(size_t(M * lda));
        B.resize(size_t((tb ? N : K) * ldb));
        C0.resize(size_t(M * ldc));
        for (float &v : A) v = r.next();
        for (float &v : B) v = r.next();
        for (float &v : C0) v = r.next();
        product.assign(size_t(M * N), 0.0);
        magnitude.assign(size_t(M * N), 0.0);
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j)
                for (int64_t k = 0; k < K; ++k) {
                    const double ab = double(A[size_t(i * lda + k)]) *
                                      double(tb ? B[size_t(j * ldb + k)] : B[size_t(k * ldb + j)]);
                    product[size_t(i * N + j)] += ab;
                    magnitude[size_t(i * N + j)] += std::fabs(ab);
                }
    }

    // With the scratch a dense layer offers.
    Product product_into(float *C, bool accumulate) const {
        static std::vector<float> scratch(snn::kCpuScratchFloats);
        return Product{Precision::f32, /*trans_a=*/false, tb, M, N, K, A.data(), lda, B.data(), ldb, C, ldc,
                       accumulate, /*work=*/nullptr, scratch.data(), /*pack=*/nullptr};
    }

    // Failures (the first three reported) of C against the double product:
    // float32 sums of K terms lie within (K + 1) u sum |a b| (u = 2^-24).
    size_t check(const std::vector<float> &C, bool accumulate) const {
        size_t bad = 0;
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < ldc; ++j) {
                const float got = C[size_t(i * ldc + j)], before = C0[size_t(i * ldc + j)];
                if (j >= N) {
                    if (got != before && ++bad <= 3) ADD_FAILURE() << "wrote past column N at " << i << "," << j;
                    continue;
                }
                const double want = (accumulate ? double(before) : 0.0) + product[size_t(i * N + j)];
                const double scale = (accumulate ? std::fabs(double(before)) : 0.0) + magnitude[size_t(i * N + j)];
                const double bound = double(K + 2) * std::ldexp(1.0, -24) * scale;
                if (!(std::fabs(double(got) - want) <= bound) && ++bad <= 3)
                    ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want " << want << " +- " << bound;
            }
        return bad;
    }
};

// The instruction-set levels the tests run at; each caps snn's kernels.
const char *const kLevels[] = {"avx512_bf16", "avx512", "avx2", "portable"};

// The row a float32 product of A (not transposed) takes: up to
// kSgemmFewRows rows of C, snn's unpacked product, whatever their size, for
// A B^T always and for A B where snn has no AVX-512 product, and so do small
// A B^T of any number of rows; else the small
// loops up to 48 * 1024 multiply-adds; past them, A B goes to snn's AVX-512
// product where there is one; the rest go to the split product.
ProductPath expected_path(const Product &p) {
    const int64_t multiply_adds = p.M * p.N * p.K;
    if (multiply_adds <= 48 * 1024)
        return p.trans_b && p.scratch ? kFewRows : ProductPath::small;
    if (p.M <= snn::kSgemmFewRows && (p.trans_b || !snn::gemm512_available())) return kFewRows;
    if (!p.trans_b && snn::gemm512_available()) return kDirect;
    return kSplit;
}

class ProductPathsTest : public ::testing::Test {
   protected:
    void SetUp() override { unsetenv("SNN_CPU_KERNELS"); }
    void TearDown() override {
        ASSERT_EQ(snn_set_cpu_isa(nullptr), SNN_OK);
        snn::cpu_set_threads(1);
    }
};

// A batch-1 dense layer's forward product (A B^T) of 1024 inputs and 1000
// outputs takes snn's unpacked product at every level and in every build,
// whatever kernels OpenBLAS chose, and so do 784 inputs and 128 outputs
// (10^5 multiply-adds) and the small products below the split's sizes; its
// backward product for the input (A B) takes snn's AVX-512 product where
// there is one, else the unpacked product.
TEST_F(ProductPathsTest, BatchOneDenseProductsTakeSnnsOwnKernels) {
    std::vector<float> A(1024), B(1024 * 1000), C(1000);
    for (const char *level : kLevels) {
        SCOPED_TRACE(level);
        ASSERT_EQ(snn_set_cpu_isa(level), SNN_OK) << snn_last_error();
        const Product forward{Precision::f32, false, true, 1, 1000, 1024, A.data(), 1024, B.data(), 1024, C.data(),
                              1000, false, nullptr, nullptr, nullptr};
        EXPECT_EQ(snn::product_path(forward), kFewRows);
        const Product input_gradient{Precision::f32, false, false, 1, 1024, 1000, C.data(), 1000, B.data(), 1024,
                                     A.data(), 1024, false, nullptr, nullptr, nullptr};
        EXPECT_EQ(snn::product_path(input_gradient), snn::gemm512_available() ? kDirect : kFewRows);
        Product four = forward;
        four.M = 4;
        EXPECT_EQ(snn::product_path(four), kFewRows);
        Product mnist = forward;
        mnist.N = 128;
        mnist.K = 784;
        mnist.lda = mnist.ldb = 784;
        mnist.ldc = 128;
        EXPECT_EQ(snn::product_path(mnist), kFewRows);
        // Five rows, or A transposed, go on down the table.
        Product five = forward;
        five.M = 5;
        EXPECT_EQ(snn::product_path(five), kSplit);
        Product ta = forward;
        ta.trans_a = true;
        EXPECT_EQ(snn::product_path(ta), kSplit);
        // Small ones too, of any number of rows with B transposed, where the
        // caller offers the scratch (a dense layer); without it (attention's
        // per-head products), and a small A B, stay in the small loops.
        std::vector<float> scratch(snn::kCpuScratchFloats);
        Product small = forward;
        small.K = 40;
        small.scratch = scratch.data();
        EXPECT_EQ(snn::product_path(small), kFewRows);
        small.M = 5;
        small.N = 100;
        EXPECT_EQ(snn::product_path(small), kFewRows);
        Product bare = small;
        bare.scratch = nullptr;
        EXPECT_EQ(snn::product_path(bare), ProductPath::small);
        small.trans_b = false;
        EXPECT_EQ(snn::product_path(small), ProductPath::small);
    }
}

// At bf16 a product of at most 4 rows of C, or of depth at most 4, takes the
// row float32 gives it (bf16's rules, cpu/kernel_choice.h); 5 rows and depth
// 5 keep a bf16 row (native with AVX-512 BF16 in force, else emulated), as
// every product does with the rules off, and as one with both operands
// transposed does. At each level.
TEST_F(ProductPathsTest, Bf16ProductsOfFewRowsOrLittleDepthTakeFloat32sRow) {
    std::vector<float> A(1024 * 8), B(1024 * 1000), C(1000 * 8);
    for (const char *level : kLevels) {
        SCOPED_TRACE(level);
        ASSERT_EQ(snn_set_cpu_isa(level), SNN_OK) << snn_last_error();
        const ProductPath bf16_row = snn::cpu_has_bf16() ? ProductPath::bf16_native : ProductPath::bf16_emulated;
        for (bool ta : {false, true})
          for (bool tb : {false, true})
            for (int64_t M : {1, 4, 5, 8})
                for (int64_t K : {1, 4, 5, 1024}) {
                    SCOPED_TRACE(testing::Message() << "M " << M << " K " << K << " ta " << ta);
                    SCOPED_TRACE(testing::Message() << "tb " << tb);
                    Product f32{Precision::f32, ta, tb, M, 1000, K, A.data(), ta ? M : K, B.data(), tb ? K : 1000,
                                C.data(), 1000, false, nullptr, nullptr, nullptr};
                    Product bf16 = f32;
                    bf16.precision = Precision::bf16;
                    const bool f32_rows = (M <= 4 || K <= 4) && !(ta && tb);
                    EXPECT_EQ(snn::product_path(bf16), f32_rows ? snn::product_path(f32) : bf16_row);
                    snn::cpu_bf16_rules(false);
                    EXPECT_EQ(snn::product_path(bf16), bf16_row);
                    snn::cpu_bf16_rules(true);
                }
    }
}

// The reference kernels (SNN_CPU_KERNELS=reference) keep the split product
// (in a build with OpenBLAS, OpenBLAS's, against which the tests compare)
// and the small loops.
TEST_F(ProductPathsTest, ReferenceKernelsKeepTheSplitProduct) {
    std::vector<float> A(1024), B(1024 * 1000), C(1000);
    const Product forward{Precision::f32, false, true, 1, 1000, 1024, A.data(), 1024, B.data(), 1024, C.data(),
                          1000, false, nullptr, nullptr, nullptr};
    std::vector<float> scratch(snn::kCpuScratchFloats);
    Product small = forward;
    small.K = 10;
    small.scratch = scratch.data();
    setenv("SNN_CPU_KERNELS", "reference", 1);
    EXPECT_EQ(snn::product_path(forward), kSplit);
    EXPECT_EQ(snn::product_path(small), ProductPath::small_transposed);
    unsetenv("SNN_CPU_KERNELS");
    EXPECT_EQ(snn::product_path(forward), kFewRows);
    EXPECT_EQ(snn::product_path(small), kFewRows);
}

// M = 1 to 7, N and K off the vector and tile widths, both B layouts, with
// and without accumulation, at every level, on 1 and 2 threads (the larger
// products split over them): the row taken is the expected one, and C the
// double product to float32's bound, columns past N untouched.
TEST_F(ProductPathsTest, FewRowProductsMatchTheDoubleProduct) {
    for (const char *level : kLevels) {
        SCOPED_TRACE(level);
        ASSERT_EQ(snn_set_cpu_isa(level), SNN_OK) << snn_last_error();
        for (int32_t threads : {1, 2}) {
            snn::cpu_set_threads(threads);
            for (int64_t M = 1; M <= 7; ++M)
                for (int64_t N : {1, 13, 67, 517, 1031})
                    for (int64_t K : {1, 3, 7, 33, 787, 1021})
                        for (bool tb : {false, true}) {
                            const Operands o(tb, M, N, K);
                            for (bool accumulate : {false, true}) {
                                SCOPED_TRACE(::testing::Message() << "threads " << threads << " M " << M << " N "
                                                                  << N << " K " << K << " tb " << tb
                                                                  << " accumulate " << accumulate);
                                std::vector<float> C = o.C0;
                                const Product p = o.product_into(C.data(), accumulate);
                                EXPECT_EQ(snn::product_path(p), expected_path(p));
                                snn::run_product(p);
                                EXPECT_EQ(o.check(C, accumulate), 0u);
                            }
                        }
        }
    }
}



// A row of C has the same bits in a product of any number of rows, where the
// rows take snn's dot products (small A B^T, and up to 4 rows of any size):
// a batch of 1 to 9 gives the rows of the batch of 9, at every level.
TEST_F(ProductPathsTest, ARowHasTheSameBitsInAProductOfAnyNumberOfRows) {
    for (const char *level : kLevels) {
        SCOPED_TRACE(level);
        ASSERT_EQ(snn_set_cpu_isa(level), SNN_OK) << snn_last_error();
        for (int64_t K : {3, 7, 33, 100}) {
            const int64_t N = 37;
            const Operands o(true, 9, N, K);
            std::vector<float> full = o.C0;
            const Product all = o.product_into(full.data(), false);
            ASSERT_EQ(snn::product_path(all), kFewRows);
            snn::run_product(all);
            for (int64_t M = 1; M < 9; ++M) {
                std::vector<float> part = o.C0;
                Product p = o.product_into(part.data(), false);
                p.M = M;
                snn::run_product(p);
                for (int64_t i = 0; i < M; ++i)
                    for (int64_t j = 0; j < N; ++j)
                        EXPECT_EQ(part[size_t(i * o.ldc + j)], full[size_t(i * o.ldc + j)])
                            << "K " << K << " rows " << M << " C[" << i << "][" << j << "]";
            }
        }
    }
}

}  // namespace
