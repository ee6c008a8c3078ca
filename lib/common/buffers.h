// The one rule for a buffer the caller passes with its element count
// (snn.h, CONVENTIONS, "Buffers"): a NULL pointer with a count above 0 is
// SNN_ERR_NULL_ARGUMENT, checked with the other pointers before anything
// else; then the count must be the one expected (SNN_ERR_COUNT), so NULL
// with a count of 0 is accepted exactly when 0 elements are expected. Every
// entry point taking (pointer, count) goes through these functions, so the
// codes and messages are the same everywhere.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace snn {

// What a buffer must hold: `count` elements, for the reason that names it in
// the message: either `what` ("the parameter count") or, when what is null,
// a batch of `batch` samples of `per_sample` elements.
struct ExpectedCount {
    size_t count;
    const char *what;
    int64_t batch;
    size_t per_sample;
};

inline ExpectedCount count_of(size_t count, const char *what) { return {count, what, 0, 0}; }
inline ExpectedCount batch_count(int64_t batch, size_t per_sample) {
    return {size_t(batch) * per_sample, nullptr, batch, per_sample};
}

// p non-null unless count is 0: SNN_ERR_NULL_ARGUMENT "<name> is NULL".
void need_buffer(const void *p, const char *name, size_t count);

// need_buffer, then count == expected.count, else SNN_ERR_COUNT "expected N
// floats (<reason>), got M". `unit` names the elements ("floats").
void check_buffer(const void *p, const char *name, size_t count, const ExpectedCount &expected,
                  const char *unit = "floats");

// need_buffer, then a count of whole samples of `per_sample` elements, 1 to
// max_batch of them: SNN_ERR_COUNT "expected a multiple of K floats
// (outputs) up to K*max_batch (max_batch B), got M" otherwise.
void check_batch_buffer(const void *p, const char *name, size_t count, size_t per_sample, int64_t max_batch,
                        const char *unit = "floats");

}  // namespace snn
