// The instruction-set cap (SNN_CPU_ISA, cpu/kernel_choice.h): at each level,
// which kernels the tables choose (the products' micro-kernel, gemm512, the
// AVX-512 and AVX2 direct convolutions, native bf16, the backend's name), that the cap
// only lowers what the processor has, that SNN_CPU_KERNELS=avx2 is the cap
// avx2, and that a small model's forward and backward passes at each level
// agree with the reference kernels. Linked from the static library; run once
// as it is and once under SNN_CPU_ISA=avx2 (tests/unit/meson.build), which
// the environment test checks is the cap in force.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/conv_avx2.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm512.h"
#include "cpu/kernel_choice.h"
#include "cpu/sgemm.h"
#include "platform/cpu_features.h"
#include "helpers.h"

namespace {

using snn::CpuIsa;
using namespace snn_test;

constexpr CpuIsa kLevels[] = {CpuIsa::portable, CpuIsa::avx2, CpuIsa::avx512, CpuIsa::avx512_bf16};

const char *level_name(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::portable: return "portable";
        case CpuIsa::avx2: return "avx2";
        case CpuIsa::avx512: return "avx512";
        case CpuIsa::avx512_bf16: return "avx512_bf16";
    }
    return "?";
}

// What a processor with the running one's features, capped at `cap`, runs.
struct Expected {
    const char *sgemm;
    bool gemm512, bf16;
    bool conv_avx2;  // the AVX2 direct convolutions (where the build has them)
    const char *in_force;
};

Expected expected_at(CpuIsa cap) {
    const snn::CpuFeatures &p = snn::cpu_features();
    const bool avx512 = cap >= CpuIsa::avx512 && p.avx512f;
    const bool avx2 = cap >= CpuIsa::avx2 && p.avx2_fma;
    const bool neon = cap >= CpuIsa::avx2 && p.neon;
    const bool bf16 = cap >= CpuIsa::avx512_bf16 && p.avx512f && p.avx512bw && p.avx512bf16;
    Expected e{};
    e.sgemm = avx512 ? "avx512" : avx2 ? "avx2" : neon ? "neon" : "portable";
    e.gemm512 = avx512;
    e.bf16 = bf16;
    e.conv_avx2 = !avx512 && avx2 && snn::conv_avx2_built();
    e.in_force = bf16 ? "avx512_bf16" : avx512 ? "avx512" : avx2 ? "avx2" : neon ? "neon" : "portable";
    return e;
}

// Restores the cap from the environment and SNN_CPU_KERNELS when a test ends.
class CpuIsaTest : public ::testing::Test {
   protected:
    void SetUp() override {
        const char *v = std::getenv("SNN_CPU_KERNELS");
        kernels_ = v ? std::string(v) : std::string();
        had_kernels_ = v != nullptr;
    }
    void TearDown() override {
        snn::cpu_cap_isa_from_environment();
        if (had_kernels_)
            setenv("SNN_CPU_KERNELS", kernels_.c_str(), 1);
        else
            unsetenv("SNN_CPU_KERNELS");
    }

   private:
    std::string kernels_;
    bool had_kernels_ = false;
};

// The conv path the table logs for a 3x3 stride-1 convolution at the cap in
// force (the log names the chosen row).
std::string logged;
void keep_log(void *, int32_t level, const char *message) {
    if (level == SNN_LOG_INFO && std::strncmp(message, "conv 3x3", 8) == 0) logged = message;
}

std::string conv_choice() {
    logged.clear();
    EXPECT_EQ(snn_set_log_callback(keep_log, nullptr), SNN_OK);
    {
        Model m = make_model("input 12x12x8; conv 3x3 16 relu pad=1");
        Forward f = make_forward(m.get(), 2);
        run(f.get(), m.get(), std::vector<float>(2 * 12 * 12 * 8, 0.5f));
    }
    EXPECT_EQ(snn_set_log_callback(nullptr, nullptr), SNN_OK);
    return logged;
}

TEST_F(CpuIsaTest, LevelsParseByName) {
    for (CpuIsa level : kLevels) {
        CpuIsa got = CpuIsa::portable;
        EXPECT_TRUE(snn::cpu_isa_from_name(level_name(level), &got)) << level_name(level);
        EXPECT_EQ(got, level) << level_name(level);
    }
    CpuIsa untouched = CpuIsa::avx2;
    for (const char *bad : {"", "AVX2", "avx512bf16", "avx-512", "sse4", "avx2 "})
        EXPECT_FALSE(snn::cpu_isa_from_name(bad, &untouched)) << "'" << bad << "'";
    EXPECT_FALSE(snn::cpu_isa_from_name(nullptr, &untouched));
    EXPECT_EQ(untouched, CpuIsa::avx2);
}

TEST_F(CpuIsaTest, EachCapRulesTheKernelTables) {
    unsetenv("SNN_CPU_KERNELS");
    const snn::CpuFeatures &p = snn::cpu_features();
    for (CpuIsa level : kLevels) {
        SCOPED_TRACE(level_name(level));
        snn::cpu_cap_isa(level);
        const Expected e = expected_at(level);
        EXPECT_EQ(snn::cpu_isa_cap(), level);
        EXPECT_STREQ(snn::sgemm_kernel_name(snn::sgemm_kernel()), e.sgemm);
        EXPECT_EQ(snn::gemm512_available(), e.gemm512);
        EXPECT_EQ(snn::cpu_has_bf16(), e.bf16);
        EXPECT_STREQ(snn::cpu_isa_in_force(), e.in_force);
        // The cap only lowers: never a feature the processor lacks.
        const snn::CpuFeatures &k = snn::cpu_kernel_features();
        EXPECT_TRUE(!k.avx512bf16 || p.avx512bf16);
        EXPECT_TRUE(!k.avx512f || p.avx512f);
        EXPECT_TRUE(!k.avx2_fma || p.avx2_fma);
        // The processor's own kernels stay supported, for the kernel tests.
        EXPECT_EQ(snn::sgemm_kernel_supported(snn::SgemmKernel::avx512), p.avx512f);
        // bf16 through the C API: native only with AVX-512 BF16 in force.
        int32_t native = -1;
        EXPECT_EQ(snn_precision_support(SNN_DEVICE_CPU, SNN_PRECISION_BF16, &native), SNN_OK) << snn_last_error();
        EXPECT_EQ(native, e.bf16 ? 1 : 0);
        // The convolutions' table: the AVX-512 direct kernels only at
        // avx512 and above, the AVX2 ones at avx2.
        const std::string conv = conv_choice();
        EXPECT_NE(conv.find(e.gemm512 ? "AVX-512 direct" : e.conv_avx2 ? "AVX2 direct" : "im2col"), std::string::npos)
            << conv;
        if (!e.gemm512) {
            EXPECT_EQ(conv.find("AVX-512"), std::string::npos) << conv;
        }
        if (!e.conv_avx2) {
            EXPECT_EQ(conv.find("AVX2"), std::string::npos) << conv;
        }
    }
}

TEST_F(CpuIsaTest, TheBackendNameEndsWithTheLevelInForce) {
    for (CpuIsa level : kLevels) {
        snn::cpu_cap_isa(level);
        // An fp16 cache fails on the CPU with a message naming the backend.
        Model m = make_model("input 4; dense 3");
        Forward f = make_forward(m.get(), 1);
        EXPECT_NE(snn_cache_set_precision(f.get(), SNN_PRECISION_FP16), SNN_OK);
        const std::string message = snn_last_error();
        const std::string want = std::string(", snn kernels ") + expected_at(level).in_force + ")";
        EXPECT_NE(message.find(want), std::string::npos) << level_name(level) << ": " << message;
    }
}

TEST_F(CpuIsaTest, CpuKernelsAvx2IsTheCapAvx2) {
    setenv("SNN_CPU_KERNELS", "avx2", 1);
    for (CpuIsa level : kLevels) {
        SCOPED_TRACE(level_name(level));
        snn::cpu_cap_isa(level);
        const CpuIsa want = std::min(level, CpuIsa::avx2);
        EXPECT_EQ(snn::cpu_isa_cap(), want);
        EXPECT_STREQ(snn::sgemm_kernel_name(snn::sgemm_kernel()), expected_at(want).sgemm);
        EXPECT_FALSE(snn::gemm512_available());
        EXPECT_FALSE(snn::cpu_has_bf16());
    }
}

// SNN_CPU_ISA is the cap when no program chose one (meson runs this test
// with it unset and with SNN_CPU_ISA=avx2).
TEST_F(CpuIsaTest, TheEnvironmentNamesTheCap) {
    unsetenv("SNN_CPU_KERNELS");
    snn::cpu_cap_isa_from_environment();
    const char *v = std::getenv("SNN_CPU_ISA");
    CpuIsa want = CpuIsa::avx512_bf16;
    if (v != nullptr) snn::cpu_isa_from_name(v, &want);
    EXPECT_EQ(snn::cpu_isa_cap(), want) << (v ? v : "(unset)");
    EXPECT_STREQ(snn::cpu_isa_in_force(), expected_at(want).in_force);
}

// The C API: snn_set_cpu_isa sets the cap (NULL: back to SNN_CPU_ISA),
// rejects other names and leaves the cap as it was; snn_cpu_isa names the
// level in force.
TEST_F(CpuIsaTest, TheCApiSetsAndNamesTheCap) {
    unsetenv("SNN_CPU_KERNELS");
    for (CpuIsa level : kLevels) {
        ASSERT_EQ(snn_set_cpu_isa(level_name(level)), SNN_OK) << snn_last_error();
        EXPECT_EQ(snn::cpu_isa_cap(), level);
        EXPECT_STREQ(snn_cpu_isa(), expected_at(level).in_force);
    }
    ASSERT_EQ(snn_set_cpu_isa("avx2"), SNN_OK);
    EXPECT_EQ(snn_set_cpu_isa("avx512bf16"), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(snn_last_error()).find("avx512bf16"), std::string::npos) << snn_last_error();
    EXPECT_EQ(snn::cpu_isa_cap(), CpuIsa::avx2);
    ASSERT_EQ(snn_set_cpu_isa(nullptr), SNN_OK);
    const char *v = std::getenv("SNN_CPU_ISA");
    CpuIsa want = CpuIsa::avx512_bf16;
    if (v != nullptr) snn::cpu_isa_from_name(v, &want);
    EXPECT_EQ(snn::cpu_isa_cap(), want);
    EXPECT_STREQ(snn_cpu_isa(), expected_at(want).in_force);
}

struct Result {
    std::vector<float> y, grads, dx;
};

// One forward pass and one backprop (with the input gradient) of a small
// model at the cap in force (reference: SNN_CPU_KERNELS=reference).
Result run_model(const char *spec, int64_t batch, bool reference) {
    if (reference)
        setenv("SNN_CPU_KERNELS", "reference", 1);
    else
        unsetenv("SNN_CPU_KERNELS");
    Result out;
    Model m = make_model(spec);
    EXPECT_EQ(snn_model_init(m.get(), 5), SNN_OK);
    Forward f = make_forward(m.get(), batch);
    Backward b = make_backward(m.get(), batch);
    EXPECT_EQ(snn_set_input_gradient(b.get(), 1), SNN_OK);
    Random r(3);
    const std::vector<float> x = r.uniform_vector(size_t(batch) * input_size(m.get()), -1.0f, 1.0f);
    out.y = run(f.get(), m.get(), x);
    const std::vector<float> t = r.uniform_vector(out.y.size(), -1.0f, 1.0f);
    EXPECT_EQ(snn_set_targets(b.get(), t.data(), t.size()), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_MSE, nullptr), SNN_OK) << snn_last_error();
    out.grads = gradients(b.get(), m.get());
    out.dx.resize(x.size());
    EXPECT_EQ(snn_get_input_gradients(b.get(), out.dx.data(), out.dx.size()), SNN_OK) << snn_last_error();
    unsetenv("SNN_CPU_KERNELS");
    return out;
}

// As tests/unit/test_cpu_kernels.cpp: |fast - reference| <= rel * max|reference|.
void expect_close(const char *what, const std::vector<float> &got, const std::vector<float> &ref, double rel) {
    ASSERT_EQ(got.size(), ref.size()) << what;
    ASSERT_FALSE(ref.empty()) << what;
    double scale = 0.0;
    for (float v : ref) scale = std::max(scale, double(std::fabs(v)));
    size_t bad = 0;
    for (size_t i = 0; i < ref.size(); ++i)
        if (!(std::fabs(double(got[i]) - double(ref[i])) <= rel * scale + 1e-7) && ++bad <= 3)
            ADD_FAILURE() << what << "[" << i << "] " << got[i] << " reference " << ref[i];
    EXPECT_EQ(bad, 0u) << what;
}

TEST_F(CpuIsaTest, EachCapAgreesWithTheReferenceKernels) {
    // Convolutions (3x3 over 1 channel: the direct kernel; over 8: the AVX-512
    // direct kernels or the lowering), pooling and products large enough
    // for the packed product.
    const char *specs[] = {
        "input 14x14x1; conv 3x3 8 relu pad=1; conv 3x3 16 tanh pad=1; maxpool 2; flatten; dense 96 relu; "
        "dense 10",
        "input 784; dense 128 relu; dense 64 relu; dense 10",
    };
    for (const char *spec : specs) {
        SCOPED_TRACE(spec);
        ASSERT_EQ(snn_set_num_threads(1), SNN_OK);
        const Result ref = run_model(spec, 3, true);
        for (CpuIsa level : kLevels) {
            SCOPED_TRACE(level_name(level));
            snn::cpu_cap_isa(level);
            const Result got = run_model(spec, 3, false);
            expect_close("outputs", got.y, ref.y, 2e-6);
            expect_close("parameter gradients", got.grads, ref.grads, 1e-5);
            expect_close("input gradients", got.dx, ref.dx, 1e-5);
        }
    }
}

}  // namespace
