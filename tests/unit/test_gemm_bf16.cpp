// The bf16 matrix product (cpu/gemm_bf16.h). The emulated path (operands
// rounded to bf16, the float32 product) against a double-precision product
// of the rounded operands; the native AVX-512 BF16 kernel against the
// emulated path, over every M, N and K from 1 to 70 in steps that cross the
// tile and pair edges, odd leading dimensions, every transposition,
// accumulation, and NaN, infinite, huge and tiny operands. The native part
// is skipped where the processor lacks AVX-512 BF16. These run with the
// rule that gives products of few rows or little depth float32's kernels
// turned off (cpu_bf16_rules); with it on, such a product is float32's,
// bit for bit, and the others still round.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/gemm_bf16.h"
#include "cpu/product_paths.h"
#include "cpu/kernel_choice.h"
#include "core/math.h"

#include "lcg.h"

namespace {

using snn::CpuKernels;

using snn_test::Lcg;

struct Case {
    bool ta, tb, accumulate;
    int64_t M, N, K, lda, ldb, ldc;
    std::vector<float> A, B, C0;
};

Case make_case(bool ta, bool tb, int64_t M, int64_t N, int64_t K, bool accumulate) {
    Case c{ta, tb, accumulate, M, N, K, (ta ? M : K) + 3, (tb ? K : N) + 5, N + 2, {}, {}, {}};
    Lcg r{uint64_t(M * 1000003 + N * 1009 + K * 7 + ta * 2 + tb)};
    c.A.resize(size_t((ta ? K : M) * c.lda));
    c.B.resize(size_t((tb ? N : K) * c.ldb));
    c.C0.resize(size_t(M * c.ldc));
    for (float &v : c.A) v = r.next();
    for (float &v : c.B) v = r.next();
    for (float &v : c.C0) v = r.next();
    return c;
}

float a_at(const Case &c, int64_t i, int64_t k) { return c.ta ? c.A[size_t(k * c.lda + i)] : c.A[size_t(i * c.lda + k)]; }
float b_at(const Case &c, int64_t k, int64_t j) { return c.tb ? c.B[size_t(j * c.ldb + k)] : c.B[size_t(k * c.ldb + j)]; }

// C by gemm_bf16 with the given kernels (the packed form follows them),
// the bf16 rules off unless asked.
std::vector<float> run(const Case &c, CpuKernels kernels, bool bf16_rules = false) {
    snn::cpu_choose_kernels(kernels);
    snn::cpu_bf16_rules(bf16_rules);
    std::vector<float> C = c.C0;
    std::vector<unsigned char> work(snn::gemm_bf16_bytes(c.M, c.N, c.K) + 64);
    snn::gemm_bf16(c.ta, c.tb, c.M, c.N, c.K, c.A.data(), c.lda, c.B.data(), c.ldb, C.data(), c.ldc, c.accumulate,
                   work.data());
    snn::cpu_choose_kernels(CpuKernels::environment);
    snn::cpu_bf16_rules(true);
    return C;
}

// C by the float32 product (gemm_at at float32).
std::vector<float> run_f32(const Case &c) {
    std::vector<float> C = c.C0;
    snn::gemm_at(snn::Precision::f32, c.ta, c.tb, c.M, c.N, c.K, c.A.data(), c.lda, c.B.data(), c.ldb, C.data(), c.ldc,
                 c.accumulate, nullptr, nullptr);
    return C;
}

// Sum of |a b| over k for C[i][j] (the scale of summation-order error).
double magnitude(const Case &c, int64_t i, int64_t j) {
    double s = c.accumulate ? std::fabs(double(c.C0[size_t(i * c.ldc + j)])) : 0.0;
    for (int64_t k = 0; k < c.K; ++k) s += std::fabs(double(snn::bf16_round(a_at(c, i, k))) * snn::bf16_round(b_at(c, k, j)));
    return s;
}

// got against want: equal past column N, within tol * magnitude inside.
size_t compare(const Case &c, const std::vector<float> &got, const std::vector<float> &want, double tol,
               const char *what) {
    size_t bad = 0;
    for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.ldc; ++j) {
            const float g = got[size_t(i * c.ldc + j)], w = want[size_t(i * c.ldc + j)];
            const bool ok = j >= c.N ? g == w : std::fabs(double(g) - w) <= tol * magnitude(c, i, j) + 1e-30;
            if (!ok && ++bad <= 3)
                ADD_FAILURE() << what << ": C[" << i << "][" << j << "] = " << g << ", want " << w << " (M " << c.M
                              << " N " << c.N << " K " << c.K << " ta " << c.ta << " tb " << c.tb << " acc "
                              << c.accumulate << ")";
        }
    return bad;
}

// The double-precision product of the rounded operands.
std::vector<float> reference(const Case &c) {
    std::vector<float> C = c.C0;
    for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.N; ++j) {
            double s = c.accumulate ? double(c.C0[size_t(i * c.ldc + j)]) : 0.0;
            for (int64_t k = 0; k < c.K; ++k) s += double(snn::bf16_round(a_at(c, i, k))) * snn::bf16_round(b_at(c, k, j));
            C[size_t(i * c.ldc + j)] = float(s);
        }
    return C;
}

// Float32 sums of K terms in any order are within about K * 2^-24 of the
// sum of magnitudes; 1e-6 leaves room for K up to a few hundred here.
constexpr double kSumTol = 1e-6;

void check(bool ta, bool tb, int64_t M, int64_t N, int64_t K, bool accumulate, bool native) {
    const Case c = make_case(ta, tb, M, N, K, accumulate);
    const std::vector<float> emulated = run(c, CpuKernels::reference);
    EXPECT_EQ(compare(c, emulated, reference(c), kSumTol, "emulated"), 0u);
    if (native) {
        EXPECT_EQ(compare(c, run(c, CpuKernels::fast), emulated, 2 * kSumTol, "native"), 0u);
    }
}

bool native_available() {
    snn::cpu_choose_kernels(CpuKernels::fast);
    const bool has = snn::cpu_has_bf16();
    snn::cpu_choose_kernels(CpuKernels::environment);
    return has;
}

// With the rules on, a product of at most 4 rows of C or of depth at most 4
// is float32's, bit for bit; one of 5 rows and depth 5 or more rounds its
// operands (off float32's by far more than summation order, as the
// emulated path is). Both operands transposed: no op asks for it, and the
// rule leaves it to bf16.
TEST(GemmBf16, FewRowsOrLittleDepthRunFloat32) {
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            for (int64_t M : {1, 4, 5, 33})
                for (int64_t K : {1, 4, 5, 70}) {
                    const Case c = make_case(ta, tb, M, 37, K, false);
                    const std::vector<float> got = run(c, CpuKernels::environment, /*bf16_rules=*/true);
                    // (float32's products take no product with both operands
                    // transposed: none is asked for.)
                    const std::vector<float> f32 = ta && tb ? std::vector<float>() : run_f32(c);
                    SCOPED_TRACE(testing::Message() << "M " << M << " K " << K << " ta " << ta << " tb " << tb);
                    if (ta && tb) {
                        EXPECT_EQ(compare(c, got, reference(c), 2 * kSumTol, "bf16, both transposed"), 0u);
                    } else if (M <= 4 || K <= 4) {
                        EXPECT_EQ(std::memcmp(got.data(), f32.data(), got.size() * sizeof(float)), 0);
                    } else {
                        EXPECT_EQ(compare(c, got, reference(c), 2 * kSumTol, "bf16"), 0u);
                        double gap = 0.0;
                        for (size_t i = 0; i < got.size(); ++i) gap = std::max(gap, double(std::fabs(got[i] - f32[i])));
                        EXPECT_GT(gap, 1e-4);
                    }
                }
}

TEST(GemmBf16, ShapesFrom1To70) {
    const bool native = native_available();
    if (!native) std::printf("no AVX-512 BF16: the emulated path alone is checked\n");
    const int64_t sizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 64, 70};
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            for (int64_t M : sizes)
                for (int64_t N : {1, 5, 16, 17, 32, 33, 63, 70})
                    for (int64_t K : {1, 2, 3, 16, 31, 32, 33, 70}) check(ta, tb, M, N, K, (M + N + K) % 2 == 0, native);
}

// Larger than one packed block of each kind (192 pairs of k, 128 rows, 512
// columns) and than the threshold at which the work is split.
TEST(GemmBf16, Blocks) {
    const bool native = native_available();
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            check(ta, tb, 300, 40, 777, false, native);
            check(ta, tb, 20, 600, 390, true, native);
        }
}

// op(B) given by row pointers (gemm_bf16_pack_b_rows, the shifted lowering's
// rows) gives the product of the matrix those rows form, with either kernel.
TEST(GemmBf16, RowsOfB) {
    const bool native = native_available();
    for (bool tb : {false, true})
        for (int64_t K : {1, 7, 40})
            for (int64_t N : {3, 33, 70}) {
                const int64_t M = 11, rows = tb ? N : K, cols = tb ? K : N;
                Case c = make_case(false, tb, M, N, K, true);
                // The rows of B, in reverse order in their own buffer.
                std::vector<float> store(size_t(rows * (cols + 1)));
                std::vector<const float *> at(static_cast<size_t>(rows));
                for (int64_t r = 0; r < rows; ++r) {
                    float *row = store.data() + (rows - 1 - r) * (cols + 1);
                    for (int64_t k = 0; k < cols; ++k) row[k] = c.B[size_t(r * c.ldb + k)];
                    at[size_t(r)] = row;
                }
                for (CpuKernels kernels : {CpuKernels::reference, CpuKernels::fast}) {
                    if (kernels == CpuKernels::fast && !native) continue;
                    snn::cpu_choose_kernels(kernels);
                    std::vector<float> C = c.C0;
                    std::vector<unsigned char> a(snn::gemm_bf16_a_bytes(M, K)), b(snn::gemm_bf16_b_bytes(K, N));
                    snn::gemm_bf16_pack_a(false, M, K, c.A.data(), c.lda, a.data());
                    snn::gemm_bf16_pack_b_rows(tb, K, N, at.data(), b.data());
                    snn::gemm_bf16_packed(M, N, K, a.data(), b.data(), C.data(), c.ldc, true);
                    snn::cpu_choose_kernels(CpuKernels::environment);
                    EXPECT_EQ(compare(c, C, run(c, kernels), 0.0, "rows"), 0u);
                }
            }
}

// snn's own bf16 kernels: the packing and the product split over the
// threads (rows or columns of C, row groups of op(A) and panels of op(B))
// give the same bits as one thread, since the sums over k do not depend on
// the split. The reference path (rounded operands through OpenBLAS's
// sgemm, split in blocks of C) promises what snn.h promises: the same bits
// again for the same thread count, and another thread count within
// rounding, since OpenBLAS's kernels (OPENBLAS_CORETYPE=Haswell among
// them) may round blocks of other sizes differently.
constexpr std::array<int64_t, 3> kLarge[] = {{300, 40, 777}, {64, 600, 390}};  // M, N, K

TEST(GemmBf16, ThreadsGiveTheSameBits) {
    if (!native_available()) GTEST_SKIP() << "no native bf16 kernels on this processor";
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            for (const std::array<int64_t, 3> &s : kLarge) {
                const Case c = make_case(ta, tb, s[0], s[1], s[2], false);
                snn::cpu_set_threads(1);
                const std::vector<float> one = run(c, CpuKernels::fast);
                for (int32_t threads : {2, 3}) {
                    snn::cpu_set_threads(threads);
                    const std::vector<float> many = run(c, CpuKernels::fast);
                    EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0) << threads;
                }
                snn::cpu_set_threads(1);
            }
}

TEST(GemmBf16, ReferenceIsDeterministicPerThreadCount) {
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            for (const std::array<int64_t, 3> &s : kLarge) {
                const Case c = make_case(ta, tb, s[0], s[1], s[2], false);
                snn::cpu_set_threads(1);
                const std::vector<float> one = run(c, CpuKernels::reference);
                for (int32_t threads : {1, 2, 3}) {
                    snn::cpu_set_threads(threads);
                    const std::vector<float> first = run(c, CpuKernels::reference);
                    const std::vector<float> again = run(c, CpuKernels::reference);
                    EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)), 0) << threads;
                    EXPECT_EQ(compare(c, first, one, 1e-5, "threads"), 0u) << threads;
                }
                snn::cpu_set_threads(1);
            }
}

TEST(GemmBf16, ZeroDepth) {
    const Case c = make_case(false, false, 3, 5, 0, false);
    for (CpuKernels k : {CpuKernels::reference, CpuKernels::fast}) {
        const std::vector<float> C = run(c, k);
        for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(C[size_t(i * c.ldc + j)], 0.0f);
    }
}

// NaN and infinite operands propagate as in float32; values beyond bf16's
// largest (3.39e38) round to infinity, as PyTorch's conversion does;
// subnormal operands give sums within the smallest normal float of the
// emulated path's (the processor's bf16 instructions count them as zero).
TEST(GemmBf16, SpecialValues) {
    const bool native = native_available();
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            Case c = make_case(ta, tb, 9, 33, 21, false);
            auto set_a = [&](int64_t i, int64_t k, float v) { (c.ta ? c.A[size_t(k * c.lda + i)] : c.A[size_t(i * c.lda + k)]) = v; };
            auto set_b = [&](int64_t k, int64_t j, float v) { (c.tb ? c.B[size_t(j * c.ldb + k)] : c.B[size_t(k * c.ldb + j)]) = v; };
            for (int64_t k = 0; k < c.K; ++k) {
                set_a(1, k, 1e-40f);          // row 1: subnormal
                set_a(2, k, 0.0f);            // row 2: one huge term
                set_b(k, 3, std::fabs(b_at(c, k, 3)));
            }
            set_a(0, 4, nan);                 // row 0: NaN everywhere
            set_a(2, 5, 3.4e38f);             // rounds to +inf
            set_b(5, 3, 1.0f);
            set_a(3, 6, inf);                 // row 3: inf times 0 is NaN at column 7 only
            set_b(6, 7, 0.0f);
            for (CpuKernels kernels : {CpuKernels::reference, CpuKernels::fast}) {
                if (kernels == CpuKernels::fast && !native) continue;
                const std::vector<float> C = run(c, kernels);
                auto at = [&](int64_t i, int64_t j) { return C[size_t(i * c.ldc + j)]; };
                for (int64_t j = 0; j < c.N; ++j) {
                    EXPECT_TRUE(std::isnan(at(0, j))) << j;
                    EXPECT_LE(std::fabs(at(1, j)), 1e-37f) << j;
                    EXPECT_EQ(std::isnan(at(3, j)), j == 7) << j;
                    if (j != 7) {
                        EXPECT_TRUE(std::isinf(at(3, j))) << j;
                    }
                }
                EXPECT_EQ(at(2, 3), inf);
            }
        }
}

}  // namespace
