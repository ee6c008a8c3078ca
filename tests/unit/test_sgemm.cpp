// snn's packed product (cpu/sgemm.h), every micro-kernel the processor can
// run, against a double-precision product: shapes of one element, primes,
// shapes across every block (mc, kc, nc) and tile (MR, NR) edge, K = 0,
// strides wider than the rows, the four transpositions, with and without
// accumulation; the unpacked product of few rows likewise. Float32 sums
// over K terms are within (K + 1) u sum |a b| of the exact sum (u = 2^-24),
// the bound asserted. Then what the split over
// the threads relies on: a block of rows or columns of C computed alone
// equals the same block of the whole product, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/sgemm.h"

#include "lcg.h"

namespace {

using snn::SgemmKernel;

using snn_test::Lcg;

const SgemmKernel kKernels[] = {SgemmKernel::avx512, SgemmKernel::avx2, SgemmKernel::neon, SgemmKernel::portable};

struct Shape {
    int64_t M, N, K;
};

// 1 element, primes, K = 0, empty C, tile edges (AVX-512 8 x 32, AVX2 6 x 16,
// NEON 8 x 12, portable 6 x 8), block edges (mc 64 or 72, kc 256, nc 504 or
// 512), and a product across all of them.
const Shape kShapes[] = {
    {1, 1, 1},    {7, 13, 29},  {3, 5, 0},    {0, 5, 3},      {5, 0, 3},    {6, 8, 1},      {8, 32, 256},
    {9, 33, 257}, {5, 7, 300},  {65, 31, 17}, {73, 17, 255},  {13, 1030, 7}, {1, 600, 300}, {300, 1, 600},
    {150, 530, 520},
};

// Operands of op(A) [M][K] and op(B) [K][N] stored with strides wider than
// their rows, and a C of N + 2 columns whose last two must stay as they were.
struct Operands {
    bool ta, tb;
    int64_t M, N, K, lda, ldb, ldc;
    std::vector<float> A, B, C0;
    std::vector<double> product, magnitude;  // sum of a b and of |a b|, per element of C

    Operands(bool ta_, bool tb_, Shape s) : ta(ta_), tb(tb_), M(s.M), N(s.N), K(s.K) {
        lda = (ta ? M : K) + 3;
        ldb = (tb ? K : N) + 5;
        ldc = N + 2;
        Lcg r{uint64_t(M * 1000003 + N * 1009 + K * 7 + ta * 2 + tb)};
        A.resize(size_t((ta ? K : M) * lda));
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
                    const double ab = double(a(i, k)) * double(b(k, j));
                    product[size_t(i * N + j)] += ab;
                    magnitude[size_t(i * N + j)] += std::fabs(ab);
                }
    }
    float a(int64_t i, int64_t k) const { return ta ? A[size_t(k * lda + i)] : A[size_t(i * lda + k)]; }
    float b(int64_t k, int64_t j) const { return tb ? B[size_t(j * ldb + k)] : B[size_t(k * ldb + j)]; }

    std::vector<float> run(SgemmKernel kernel, bool accumulate) const {
        std::vector<float> C = C0, pack(snn::sgemm_pack_floats());
        snn::sgemm_with(kernel, ta, tb, M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc, accumulate,
                        pack.data());
        return C;
    }

    // Failures (the first three reported) of C against the double product.
    size_t check(const std::vector<float> &C, bool accumulate, const char *what) const {
        size_t bad = 0;
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < ldc; ++j) {
                const float got = C[size_t(i * ldc + j)], before = C0[size_t(i * ldc + j)];
                if (j >= N) {
                    if (got != before && ++bad <= 3) ADD_FAILURE() << what << ": wrote past column N at " << i << "," << j;
                    continue;
                }
                const double want = (accumulate ? double(before) : 0.0) + product[size_t(i * N + j)];
                const double scale = (accumulate ? std::fabs(double(before)) : 0.0) + magnitude[size_t(i * N + j)];
                const double bound = double(K + 1) * std::ldexp(1.0, -24) * scale;
                if (!(std::fabs(double(got) - want) <= bound) && ++bad <= 3)
                    ADD_FAILURE() << what << ": C[" << i << "][" << j << "] = " << got << ", want " << want << " +- "
                                  << bound << " (M " << M << " N " << N << " K " << K << " ta " << ta << " tb " << tb
                                  << " accumulate " << accumulate << ")";
            }
        return bad;
    }
};

TEST(Sgemm, EveryKernelMatchesTheDoubleProduct) {
    int kernels = 0;
    for (SgemmKernel kernel : kKernels) {
        if (!snn::sgemm_kernel_supported(kernel)) continue;
        ++kernels;
        for (const Shape &s : kShapes)
            for (int t = 0; t < 4; ++t) {
                const Operands o(t & 1, t & 2, s);
                for (bool accumulate : {false, true})
                    EXPECT_EQ(o.check(o.run(kernel, accumulate), accumulate, snn::sgemm_kernel_name(kernel)), 0u);
            }
    }
    EXPECT_TRUE(snn::sgemm_kernel_supported(SgemmKernel::portable));
    EXPECT_GE(kernels, 1);
}

// Up to 4 rows of C unpacked (sgemm_few_rows), A not transposed: every row
// count, column counts around 4 columns and 1 and 4 vectors of each kernel,
// depths around one vector.
TEST(Sgemm, FewRowsMatchTheDoubleProduct) {
    for (SgemmKernel kernel : kKernels) {
        if (!snn::sgemm_kernel_supported(kernel)) continue;
        for (int64_t M = 1; M <= snn::kSgemmFewRows; ++M)
            for (int64_t N : {1, 3, 5, 8, 15, 16, 17, 33, 63, 64, 65, 100, 130})
                for (int64_t K : {0, 1, 3, 4, 7, 8, 15, 16, 17, 100})
                    for (bool tb : {false, true}) {
                        const Operands o(false, tb, Shape{M, N, K});
                        for (bool accumulate : {false, true}) {
                            std::vector<float> C = o.C0;
                            snn::sgemm_few_rows(kernel, tb, M, N, K, o.A.data(), o.lda, o.B.data(), o.ldb, C.data(),
                                                o.ldc, accumulate);
                            EXPECT_EQ(o.check(C, accumulate, snn::sgemm_kernel_name(kernel)), 0u);
                        }
                    }
    }
}

// The processor's own kernel and the portable one agree to the same bound
// on each element (they sum in the same order; the portable one rounds each
// product separately, the others fuse the multiply-adds).
TEST(Sgemm, KernelsAgreeWithThePortableOne) {
    for (SgemmKernel kernel : kKernels) {
        if (kernel == SgemmKernel::portable || !snn::sgemm_kernel_supported(kernel)) continue;
        const Operands o(false, true, Shape{150, 530, 520});
        const std::vector<float> C = o.run(kernel, false), P = o.run(SgemmKernel::portable, false);
        size_t bad = 0;
        for (int64_t i = 0; i < o.M; ++i)
            for (int64_t j = 0; j < o.N; ++j) {
                const double bound = 2.0 * double(o.K + 1) * std::ldexp(1.0, -24) * o.magnitude[size_t(i * o.N + j)];
                if (!(std::fabs(double(C[size_t(i * o.ldc + j)]) - double(P[size_t(i * o.ldc + j)])) <= bound))
                    ++bad;
            }
        EXPECT_EQ(bad, 0u) << snn::sgemm_kernel_name(kernel);
    }
}

// A block of rows (or of columns) of C computed as a product of its own
// equals those rows (columns) of the whole product: each element's sum runs
// in the same order wherever its tile lies.
TEST(Sgemm, BlocksOfCEqualTheWholeProduct) {
    for (SgemmKernel kernel : kKernels) {
        if (!snn::sgemm_kernel_supported(kernel)) continue;
        for (int t = 0; t < 4; ++t) {
            const bool ta = t & 1, tb = t & 2;
            const Operands o(ta, tb, Shape{150, 530, 300});
            const std::vector<float> whole = o.run(kernel, true);
            std::vector<float> blocks = o.C0, pack(snn::sgemm_pack_floats());
            const int64_t r0 = 77, c0 = 48;  // rows [0, 77) and [77, M); then columns of the latter
            snn::sgemm_with(kernel, ta, tb, r0, o.N, o.K, o.A.data(), o.lda, o.B.data(), o.ldb, blocks.data(), o.ldc,
                            true, pack.data());
            const float *A1 = o.A.data() + (ta ? r0 : r0 * o.lda);
            float *C1 = blocks.data() + r0 * o.ldc;
            snn::sgemm_with(kernel, ta, tb, o.M - r0, c0, o.K, A1, o.lda, o.B.data(), o.ldb, C1, o.ldc, true,
                            pack.data());
            snn::sgemm_with(kernel, ta, tb, o.M - r0, o.N - c0, o.K, A1, o.lda,
                            o.B.data() + (tb ? c0 * o.ldb : c0), o.ldb, C1 + c0, o.ldc, true, pack.data());
            EXPECT_EQ(blocks, whole) << snn::sgemm_kernel_name(kernel) << " ta " << ta << " tb " << tb;
        }
    }
}

// The engine's products on 2 threads (split by rows or columns of C) equal
// those on 1, bit for bit, and the double product: in a build without
// OpenBLAS, where the transposed products are snn's sgemm split over the
// threads.
TEST(Sgemm, ThreadedProductsEqualOneThread) {
#ifdef SNN_HAVE_OPENBLAS
    GTEST_SKIP() << "the products are OpenBLAS's in this build";
#else
    for (const Shape &s : {Shape{150, 530, 300}, Shape{530, 150, 300}})
        for (bool ta : {false, true}) {
            const Operands o(ta, !ta, s);
            std::vector<float> C[2];
            for (int32_t threads = 1; threads <= 2; ++threads) {
                snn::cpu_set_threads(threads);
                C[threads - 1] = o.C0;
                if (ta)
                    snn::gemm_tn(o.M, o.N, o.K, o.A.data(), o.lda, o.B.data(), o.ldb, C[threads - 1].data(), o.ldc,
                                 /*accumulate=*/false);
                else
                    snn::gemm_nt(o.M, o.N, o.K, o.A.data(), o.lda, o.B.data(), o.ldb, C[threads - 1].data(), o.ldc,
                                 /*accumulate=*/false, /*scratch=*/nullptr);
            }
            snn::cpu_set_threads(1);
            EXPECT_EQ(C[0], C[1]) << "M " << s.M << " N " << s.N << " ta " << ta;
            EXPECT_EQ(o.check(C[1], false, "2 threads"), 0u);
        }
#endif
}

}  // namespace
