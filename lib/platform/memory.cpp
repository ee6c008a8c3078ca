// Aligned host memory (see memory.h).
#include "platform/memory.h"

#include <stdlib.h>
#ifdef _WIN32
#include <malloc.h>
#endif

namespace snn {
namespace platform {

void *aligned_allocate(size_t alignment, size_t bytes) {
    if (bytes == 0) bytes = 1;
#ifdef _WIN32
    return _aligned_malloc(bytes, alignment);
#else
    void *p = nullptr;
    return posix_memalign(&p, alignment, bytes) == 0 ? p : nullptr;
#endif
}

void aligned_free(void *p) {
#ifdef _WIN32
    _aligned_free(p);
#else
    free(p);
#endif
}

}  // namespace platform
}  // namespace snn
