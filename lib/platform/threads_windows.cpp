// Threads on Windows (see threads.h). _beginthreadex rather than
// CreateThread, so the C runtime's per-thread state is set up for it. The
// small record that carries fn and arg is freed by the new thread (no fork
// on Windows can leave it behind).
#include "platform/threads.h"

#include <errno.h>
#include <process.h>
#include <stdint.h>
#include <windows.h>

#include <new>

namespace snn {
namespace platform {
namespace {

struct Start {
    void *(*fn)(void *);
    void *arg;
};

unsigned __stdcall thread_main(void *start) {
    const Start s = *static_cast<Start *>(start);
    delete static_cast<Start *>(start);
    s.fn(s.arg);
    return 0;
}

}  // namespace

int start_detached_thread(void *(*fn)(void *), void *arg) {
    Start *start = new (std::nothrow) Start{fn, arg};
    if (start == nullptr) return ENOMEM;
    const uintptr_t thread = _beginthreadex(nullptr, 0, thread_main, start, 0, nullptr);
    if (thread == 0) {
        const int err = errno;
        delete start;
        return err;
    }
    CloseHandle(reinterpret_cast<HANDLE>(thread));
    return 0;
}

const char *thread_start_call() { return "_beginthreadex"; }

int on_fork(void (*)(), void (*)(), void (*)()) { return 0; }

}  // namespace platform
}  // namespace snn
