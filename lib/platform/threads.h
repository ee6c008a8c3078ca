// Threads the library starts itself, and what fork() asks of their locks.
#pragma once

namespace snn {
namespace platform {

// Starts a thread running fn(arg) that is never joined (its resources go
// when it ends). Returns 0, or the error code of the system call
// (thread_start_call() names it).
int start_detached_thread(void *(*fn)(void *), void *arg);
const char *thread_start_call();

// Registers handlers that run around fork(): `before` in the forking
// thread, then `in_parent` in the parent and `in_child` in the child
// (pthread_atfork). Returns 0 or an error code. Windows has no fork(): it
// registers nothing and returns 0.
int on_fork(void (*before)(), void (*in_parent)(), void (*in_child)());

}  // namespace platform
}  // namespace snn
