/* What the examples share (example.h). */
#define _POSIX_C_SOURCE 200809L

#include "example.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char *program = "example";

void example_set_program(const char *name) { program = name; }

void example_bad_option(const char *message, const char *name, const char *value) {
    fprintf(stderr, "%s: %s %s", program, name, message);
    if (value) fprintf(stderr, ", got '%s'", value);
    fprintf(stderr, "\n(see %s --help)\n", program);
    exit(2);
}

long example_parse_long(const char *name, const char *value, long min, long max) {
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < min || v > max) {
        char message[96];
        snprintf(message, sizeof message, "expects an integer in [%ld, %ld]", min, max);
        example_bad_option(message, name, value);
    }
    return v;
}

double example_parse_double(const char *name, const char *value, double min, double max) {
    char *end = NULL;
    double v = strtod(value, &end);
    if (end == value || *end || !(v > min && v < max)) {
        char message[96];
        snprintf(message, sizeof message, "expects a number in (%g, %g)", min, max);
        example_bad_option(message, name, value);
    }
    return v;
}

double example_now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void *example_malloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", program);
        exit(1);
    }
    return p;
}

uint64_t example_next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t example_random_below(uint64_t *state, uint64_t bound) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do r = example_next_random(state);
    while (r >= limit);
    return r % bound;
}

void example_shuffle(int64_t *indices, size_t n, uint64_t *state) {
    for (size_t i = n - 1; i > 0; --i) {
        size_t j = (size_t)example_random_below(state, (uint64_t)i + 1);
        int64_t t = indices[i];
        indices[i] = indices[j];
        indices[j] = t;
    }
}

example_progress example_progress_start(int quiet, size_t log_every, const char *unit) {
    example_progress p = {isatty(STDOUT_FILENO), quiet, log_every, unit, 0.0};
    return p;
}

void example_progress_show(example_progress *p, long epoch, long epochs, size_t batch, size_t batches,
                           double mean_loss, double done, double elapsed) {
    if (p->quiet) return;
    int last = batch == batches;
    double rate = elapsed > 0 ? done / elapsed : 0.0;
    if (p->terminal) {
        double t = example_now_seconds();
        if (!last && t - p->last_draw < 0.1) return;
        p->last_draw = t;
        enum { WIDTH = 24 };
        char bar[WIDTH + 1];
        size_t filled = batch * WIDTH / batches;
        for (size_t i = 0; i < WIDTH; ++i) bar[i] = i < filled ? '=' : ' ';
        bar[WIDTH] = '\0';
        long eta = (long)(elapsed / (double)batch * (double)(batches - batch) + 0.5);
        printf("\repoch %ld/%ld [%s] %zu/%zu  loss %.4f  %.0f %s  ETA %ld:%02ld\033[K", epoch, epochs, bar, batch,
               batches, mean_loss, rate, p->unit, eta / 60, eta % 60);
        if (last) printf("\r\033[K");
        fflush(stdout);
    } else if (batch % p->log_every == 0) {
        printf("epoch %ld/%ld  batch %zu/%zu  loss %.4f  %.0f %s\n", epoch, epochs, batch, batches, mean_loss,
               rate, p->unit);
        fflush(stdout);
    }
}

void example_print_confusion(const char *noun, const char *const *names, int classes, int width,
                             const long *confusion) {
    printf("\n%-*s %8s %14s\n", width + 2, noun, "accuracy", "correct/total");
    for (int c = 0; c < classes; ++c) {
        long total = 0;
        for (int p = 0; p < classes; ++p) total += confusion[c * classes + p];
        long right = confusion[c * classes + c];
        printf("%d %-*s %7.1f%% %8ld/%-5ld\n", c, width, names[c],
               total ? 100.0 * (double)right / (double)total : 0.0, right, total);
    }
    printf("\nconfusion matrix (rows: true %s, columns: predicted %s)\n%*s", noun, noun, width + 2, "");
    for (int p = 0; p < classes; ++p) printf("%6d", p);
    printf("\n");
    for (int c = 0; c < classes; ++c) {
        printf("%d %-*s", c, width, names[c]);
        for (int p = 0; p < classes; ++p) printf("%6ld", confusion[c * classes + p]);
        printf("\n");
    }
}
