// The engine's process-wide settings (see settings.h).
#include "engine/settings.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "cpu/cpu_backend.h"

namespace snn {
namespace {

std::atomic<bool> g_check_finite{false};
std::atomic<bool> g_allow_tf32{false};
std::atomic<int32_t> g_threads{0};
std::once_flag g_threads_once;

int32_t default_threads() {
    const char *env = std::getenv("SNN_NUM_THREADS");
    if (env && *env) {
        char *end = nullptr;
        long v = std::strtol(env, &end, 10);
        if (end && *end == '\0' && v >= 1 && v <= 4096) return int32_t(v);
    }
    unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : int32_t(hw);
}

}  // namespace

void set_check_finite(bool on) { g_check_finite = on; }
bool check_finite_enabled() { return g_check_finite.load(std::memory_order_relaxed); }

void check_finite_host(const float *x, size_t count, const char *what) {
    if (!check_finite_enabled()) return;
    for (size_t i = 0; i < count; ++i)
        if (!std::isfinite(x[i])) fail(SNN_ERR_NOT_FINITE, "%s[%zu] is %f", what, i, double(x[i]));
}

void set_allow_tf32(bool on) { g_allow_tf32 = on; }
bool allow_tf32_enabled() { return g_allow_tf32.load(std::memory_order_relaxed); }

void ensure_threads_configured() {
    std::call_once(g_threads_once, [] {
        if (g_threads.load() == 0) {
            int32_t n = default_threads();
            g_threads = n;
            cpu_set_threads(n);
        }
    });
}

void set_threads(int32_t n) {
    std::call_once(g_threads_once, [] {});
    g_threads = n;
    cpu_set_threads(n);
}

int32_t threads() {
    ensure_threads_configured();
    return g_threads.load();
}

}  // namespace snn
