/* The number of threads of this process, for tests that check the library
 * starts (and keeps) no more threads than it should. */
#ifndef SNN_TEST_THREAD_COUNT_H
#define SNN_TEST_THREAD_COUNT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The "Threads:" line of /proc/self/status, or -1. */
static inline int thread_count(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) return -1;
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Threads:", 8) == 0) n = atoi(line + 8);
    fclose(f);
    return n;
}

#endif
