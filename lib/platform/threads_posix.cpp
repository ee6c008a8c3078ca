// Threads on POSIX systems (see threads.h).
#include "platform/threads.h"

#include <pthread.h>

namespace snn {
namespace platform {

int start_detached_thread(void *(*fn)(void *), void *arg) {
    pthread_t thread;
    const int err = pthread_create(&thread, nullptr, fn, arg);
    if (err == 0) pthread_detach(thread);
    return err;
}

const char *thread_start_call() { return "pthread_create"; }

int on_fork(void (*before)(), void (*in_parent)(), void (*in_child)()) {
    return pthread_atfork(before, in_parent, in_child);
}

}  // namespace platform
}  // namespace snn
