// The library's only mutable globals: settings and the log callback.
#include "api/log.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "cpu/cpu_backend.h"
#include "engine/network.h"
#include "snn.h"

namespace snn {
namespace {

std::mutex g_log_mutex;
snn_log_fn g_log_fn = nullptr;
void *g_log_user = nullptr;
std::atomic<bool> g_check_finite{false};
std::atomic<bool> g_allow_tf32{false};
std::atomic<int32_t> g_threads{0};
std::once_flag g_threads_once;

// g_log_mutex is held across fork(), so a child never inherits it locked by
// a thread that does not exist there. Installed when the library is loaded,
// before anything can take the lock.
void lock_log() { g_log_mutex.lock(); }
void unlock_log() { g_log_mutex.unlock(); }
__attribute__((constructor)) void install_log_fork_handlers() { pthread_atfork(lock_log, unlock_log, unlock_log); }

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

// No lock is held while the host's callback runs: it may install or remove
// the callback, and one that leaves by unwinding or longjmp (C#, Julia)
// skips no destructor of ours and leaves nothing locked. A C++ exception it
// throws is dropped here, so none reaches the calling entry point or the CUDA
// plugin, and the failure to log is not itself logged.
void log_message(int32_t level, const char *message) noexcept {
    snn_log_fn fn;
    void *user;
    {
        std::lock_guard<std::mutex> lock(g_log_mutex);
        fn = g_log_fn;
        user = g_log_user;
    }
    if (fn == nullptr) return;
    try {
        fn(user, level, message);
    } catch (...) {
        // The host's own failure: the failing call keeps its status.
    }
}

bool check_finite_enabled() { return g_check_finite.load(std::memory_order_relaxed); }
bool allow_tf32_enabled() { return g_allow_tf32.load(std::memory_order_relaxed); }

// Applies the default thread bound once, before the first use of OpenBLAS.
void ensure_threads_configured() {
    std::call_once(g_threads_once, [] {
        if (g_threads.load() == 0) {
            int32_t n = default_threads();
            g_threads = n;
            cpu_set_threads(n);
        }
    });
}

}  // namespace snn

using namespace snn;

extern "C" {

SNN_API snn_status snn_set_log_callback(snn_log_fn callback, void *user_data) {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_log_fn = callback;
    g_log_user = user_data;
    return SNN_OK;
}

SNN_API snn_status snn_set_check_finite(int32_t on) {
    g_check_finite = on != 0;
    return SNN_OK;
}

SNN_API snn_status snn_set_allow_tf32(int32_t on) {
    g_allow_tf32 = on != 0;
    return SNN_OK;
}

SNN_API int32_t snn_get_num_threads(void) {
    ensure_threads_configured();
    return g_threads.load();
}

}  // extern "C"

// snn_set_num_threads lives in api_core.cpp (it reports errors).
namespace snn {
void set_threads(int32_t n) {
    std::call_once(g_threads_once, [] {});
    g_threads = n;
    cpu_set_threads(n);
}
}  // namespace snn
