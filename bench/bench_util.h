/* What snn's C benchmark programs share: a monotonic clock, the comparison
 * qsort needs for medians, and, where snn.h is included first, CHECK, which
 * exits with snn's message when a call fails. Each program defines
 * _POSIX_C_SOURCE before its first include (clock_gettime). */
#ifndef SNN_BENCH_UTIL_H
#define SNN_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Microseconds on the monotonic clock. */
static inline double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Ascending order of doubles, for qsort. */
static inline int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#ifdef SNN_H
#define CHECK(call)                                                                    \
    do {                                                                               \
        if ((call) != SNN_OK) {                                                        \
            fprintf(stderr, "%s failed: %s\n", #call, snn_last_error());               \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)
#endif

#endif
