// Internal error type: thrown inside the engine, turned into a status and a
// thread-local message at the C boundary (lib/api), never crossing it.
#pragma once

#include <cstdarg>
#include <exception>
#include <string>

#include "snn.h"

namespace snn {

class Error : public std::exception {
public:
    Error(snn_status status, std::string message) : status_(status), message_(std::move(message)) {}
    snn_status status() const noexcept { return status_; }
    const char *what() const noexcept override { return message_.c_str(); }

private:
    snn_status status_;
    std::string message_;
};

// printf-style message formatting (the engine's only use of varargs; never
// exported). It formats with the C library's vsnprintf, which on MinGW is
// MinGW's own C99 one (libstdc++ asks for it), so %zu and %lld work there
// too: the check must follow C99 (gnu_printf), not msvcrt's printf.
#if defined(__MINGW32__) && !defined(__clang__)
#define SNN_PRINTF gnu_printf
#else
#define SNN_PRINTF printf
#endif
std::string format(const char *fmt, ...) __attribute__((format(SNN_PRINTF, 1, 2)));

[[noreturn]] void fail(snn_status status, const char *fmt, ...) __attribute__((format(SNN_PRINTF, 2, 3)));

}  // namespace snn
