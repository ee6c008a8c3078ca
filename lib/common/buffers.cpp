// Checks of caller buffers (see buffers.h).
#include "common/buffers.h"

#include "common/error.h"

namespace snn {

void need_buffer(const void *p, const char *name, size_t count) {
    if (p == nullptr && count != 0) fail(SNN_ERR_NULL_ARGUMENT, "%s is NULL", name);
}

void check_buffer(const void *p, const char *name, size_t count, const ExpectedCount &expected, const char *unit) {
    need_buffer(p, name, count);
    if (count != expected.count) {
        if (expected.what)
            fail(SNN_ERR_COUNT, "expected %zu %s (%s), got %zu", expected.count, unit, expected.what, count);
        fail(SNN_ERR_COUNT, "expected %zu %s (batch %lld x %zu), got %zu", expected.count, unit,
             (long long)expected.batch, expected.per_sample, count);
    }
}

void check_batch_buffer(const void *p, const char *name, size_t count, size_t per_sample, int64_t max_batch,
                        const char *unit) {
    need_buffer(p, name, count);
    if (count == 0 || count % per_sample != 0 || count / per_sample > size_t(max_batch))
        fail(SNN_ERR_COUNT, "expected a multiple of %zu %s (outputs) up to %zu (max_batch %lld), got %zu",
             per_sample, unit, per_sample * size_t(max_batch), (long long)max_batch, count);
}

}  // namespace snn
