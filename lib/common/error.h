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
// exported).
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

[[noreturn]] void fail(snn_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace snn
