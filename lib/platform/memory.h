// Aligned host memory (posix_memalign, _aligned_malloc).
#pragma once

#include <stddef.h>

namespace snn {
namespace platform {

// `bytes` bytes (at least one) aligned to `alignment`, a power of two and a
// multiple of sizeof(void *); null when out of memory. Freed only by
// aligned_free.
void *aligned_allocate(size_t alignment, size_t bytes);
void aligned_free(void *p);

}  // namespace platform
}  // namespace snn
