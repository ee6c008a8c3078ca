// The AVX-512 matrix products (cpu/gemm512.h) against a double-precision
// product, over shapes that leave partial tiles and partial packed blocks,
// with every transposition and with accumulation.
// Skipped where the processor has no AVX-512.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/gemm512.h"
#include "platform/cpu_features.h"

#include "lcg.h"

namespace {

using snn_test::Lcg;

void check(bool ta, bool tb, int64_t M, int64_t N, int64_t K, bool accumulate) {
    Lcg r{uint64_t(M * 1000003 + N * 1009 + K * 7 + ta * 2 + tb)};
    const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
    std::vector<float> A(size_t((ta ? K : M) * lda)), B(size_t((tb ? N : K) * ldb)), C(size_t(M * ldc));
    for (float &v : A) v = r.next();
    for (float &v : B) v = r.next();
    for (float &v : C) v = r.next();
    const std::vector<float> C0 = C;
    std::vector<float> pack(snn::gemm512_pack_floats());
    snn::gemm512(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc, accumulate, pack.data());
    size_t bad = 0;
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
            const float got = C[size_t(i * ldc + j)];
            if (j >= N) {  // past the N columns: untouched
                if (got != C0[size_t(i * ldc + j)] && ++bad <= 3) ADD_FAILURE() << "wrote past column N at " << i << "," << j;
                continue;
            }
            double want = accumulate ? double(C0[size_t(i * ldc + j)]) : 0.0, scale = std::fabs(want);
            for (int64_t k = 0; k < K; ++k) {
                const double a = ta ? A[size_t(k * lda + i)] : A[size_t(i * lda + k)];
                const double b = tb ? B[size_t(j * ldb + k)] : B[size_t(k * ldb + j)];
                want += a * b;
                scale += std::fabs(a * b);
            }
            if (!(std::fabs(got - want) <= 1e-6 * scale + 1e-30) && ++bad <= 3)
                ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want " << want << " (M " << M << " N " << N
                              << " K " << K << " ta " << ta << " tb " << tb << " acc " << accumulate << ")";
        }
    EXPECT_EQ(bad, 0u);
}

// gemm512_nn_direct (no packing) the same way, over every row count of a
// tile's tail (1 to 8) and column counts around its 16, 32 and 64 edges.
void check_direct(int64_t M, int64_t N, int64_t K, bool accumulate) {
    Lcg r{uint64_t(M * 7919 + N * 131 + K)};
    const int64_t lda = K + 3, ldb = N + 5, ldc = N + 2;
    std::vector<float> A(size_t(M * lda)), B(size_t(K * ldb)), C(size_t(M * ldc));
    for (float &v : A) v = r.next();
    for (float &v : B) v = r.next();
    for (float &v : C) v = r.next();
    const std::vector<float> C0 = C;
    snn::gemm512_nn_direct(M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc, accumulate);
    size_t bad = 0;
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
            const float got = C[size_t(i * ldc + j)];
            if (j >= N) {
                if (got != C0[size_t(i * ldc + j)] && ++bad <= 3) ADD_FAILURE() << "wrote past column N at " << i << "," << j;
                continue;
            }
            double want = accumulate ? double(C0[size_t(i * ldc + j)]) : 0.0, scale = std::fabs(want);
            for (int64_t k = 0; k < K; ++k) {
                want += double(A[size_t(i * lda + k)]) * double(B[size_t(k * ldb + j)]);
                scale += std::fabs(double(A[size_t(i * lda + k)]) * double(B[size_t(k * ldb + j)]));
            }
            if (!(std::fabs(got - want) <= 1e-6 * scale + 1e-30) && ++bad <= 3)
                ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want " << want << " (M " << M << " N " << N
                              << " K " << K << " acc " << accumulate << ")";
        }
    EXPECT_EQ(bad, 0u);
}

TEST(Gemm512, DirectProductMatchesADoublePrecisionProduct) {
    if (!snn::cpu_features().avx512f) GTEST_SKIP() << "this processor has no AVX-512";
    for (int64_t M : {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17})
        for (int64_t N : {1, 15, 16, 17, 31, 33, 49, 64, 65, 100})
            for (int64_t K : {0, 1, 31, 144})
                for (bool accumulate : {false, true}) check_direct(M, N, K, accumulate);
}

TEST(Gemm512, MatchesADoublePrecisionProduct) {
    if (!snn::cpu_features().avx512f) GTEST_SKIP() << "this processor has no AVX-512";
    for (int64_t M : {1, 7, 8, 9, 16, 65, 130})
        for (int64_t N : {1, 31, 32, 33, 100, 600})
            for (int64_t K : {1, 5, 256, 300})
                for (int t = 0; t < 4; ++t) check(t & 1, t & 2, M, N, K, (M + N + K + t) % 2 == 0);
}

TEST(Gemm512, LargeBlocksAndAccumulation) {
    if (!snn::cpu_features().avx512f) GTEST_SKIP() << "this processor has no AVX-512";
    // Several packed blocks of op(B) (N > 512) and of depth (K > 256), as
    // the convolutions' products have.
    check(false, false, 64, 1100, 600, false);
    check(false, true, 32, 300, 2000, true);
    check(true, false, 576, 700, 64, false);
}

TEST(Gemm512, EmptyDepthWritesZerosOrKeepsC) {
    if (!snn::cpu_features().avx512f) GTEST_SKIP() << "this processor has no AVX-512";
    check(false, false, 9, 33, 0, false);
    check(false, false, 9, 33, 0, true);
}

}  // namespace
