// The host's log callback (the settings are engine/settings.cpp).
#include "common/log.h"

#include <mutex>

#include "platform/threads.h"
#include "snn.h"

namespace snn {
namespace {

std::mutex g_log_mutex;
snn_log_fn g_log_fn = nullptr;
void *g_log_user = nullptr;

// g_log_mutex is held across fork() (POSIX), so a child never inherits it
// locked by a thread that does not exist there. Installed when the library
// is loaded, before anything can take the lock.
void lock_log() { g_log_mutex.lock(); }
void unlock_log() { g_log_mutex.unlock(); }
__attribute__((constructor)) void install_log_fork_handlers() { platform::on_fork(lock_log, unlock_log, unlock_log); }

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

}  // namespace snn

using namespace snn;

extern "C" {

SNN_API snn_status snn_set_log_callback(snn_log_fn callback, void *user_data) {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_log_fn = callback;
    g_log_user = user_data;
    return SNN_OK;
}

}  // extern "C"
