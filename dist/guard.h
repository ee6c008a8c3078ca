// The C boundary of the data-parallel libraries (libsnn_dist, libsnn_nccl):
// an exception inside, a status and a thread-local message outside, as in
// libsnn itself. Each library that includes this has its own last_error.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <new>
#include <string>

#include "snn.h"

namespace snn_dist {

struct Failure {
    snn_status status;
    std::string message;
};

inline thread_local std::string last_error;

[[noreturn]] inline void fail(snn_status status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

inline void fail(snn_status status, const char *format, ...) {
    char text[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof text, format, args);
    va_end(args);
    throw Failure{status, text};
}

// An snn_* call made inside failed: pass its status and message on.
inline void check_snn(snn_status status, const char *call) {
    if (status != SNN_OK) fail(status, "%s failed: %s", call, snn_last_error());
}

inline void need(const void *p, const char *name) {
    if (p == nullptr) fail(SNN_ERR_NULL_ARGUMENT, "%s is NULL", name);
}

template <class Body>
snn_status guarded(const char *function, Body &&body) noexcept {
    try {
        body();
        return SNN_OK;
    } catch (const Failure &f) {
        try {
            last_error = std::string(function) + ": " + f.message;
        } catch (...) {
            last_error.clear();
        }
        return f.status;
    } catch (const std::bad_alloc &) {
        last_error = std::string(function) + ": out of host memory";
        return SNN_ERR_OUT_OF_MEMORY;
    } catch (...) {
        last_error = std::string(function) + ": unknown internal error";
        return SNN_ERR_INTERNAL;
    }
}

}  // namespace snn_dist
