// Counts heap allocations made by the whole process (libsnn and OpenBLAS
// included) while counting is on: the test binary defines malloc and friends,
// which the dynamic linker then uses for every library.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void alloc_counter_start(void);
/* Stops counting and returns the number of allocations since start. */
size_t alloc_counter_stop(void);

#ifdef __cplusplus
}
#endif
