/* What the examples (fashion_mnist, words) share: their command-line
 * parsing, clock, out-of-memory exit and shuffling generator, and their
 * reports: the progress line of training and the per-class table with its
 * confusion matrix. Everything here exits the program on failure, as an
 * example may; the library itself never does. */
#ifndef SNN_EXAMPLE_H
#define SNN_EXAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* The name the messages start with ("fashion_mnist: ..."); set it first. */
void example_set_program(const char *name);

/* "<program>: <name> <message>, got '<value>'" and a pointer to --help on
 * stderr, then exit status 2 (value may be NULL). */
void example_bad_option(const char *message, const char *name, const char *value);
/* An integer in [min, max], or example_bad_option. */
long example_parse_long(const char *name, const char *value, long min, long max);
/* A number in the open interval (min, max), or example_bad_option. */
double example_parse_double(const char *name, const char *value, double min, double max);

/* Seconds on the monotonic clock. */
double example_now_seconds(void);
/* malloc that exits with "<program>: out of memory" (0 bytes allocate 1). */
void *example_malloc(size_t bytes);

/* splitmix64: a small, good, seedable generator. bench/words_torch.py
 * draws the same numbers, so both programs see the same batches. */
uint64_t example_next_random(uint64_t *state);
/* Uniform in [0, bound), without modulo bias. */
uint64_t example_random_below(uint64_t *state, uint64_t bound);
/* Fisher-Yates: every permutation equally likely. */
void example_shuffle(int64_t *indices, size_t n, uint64_t *state);

/* The progress line of training. On a terminal one line is redrawn at most
 * ten times a second (a bar, the mean loss, the rate and the time left);
 * elsewhere one line is printed every `log_every` batches. */
typedef struct {
    int terminal; /* stdout is a terminal */
    int quiet;    /* print nothing */
    size_t log_every;
    const char *unit; /* of the rate: "images/s", "steps/s" */
    double last_draw;
} example_progress;
example_progress example_progress_start(int quiet, size_t log_every, const char *unit);
/* After batch `batch` (1-based) of `batches`: `done` items (images, steps)
 * in `elapsed` seconds so far this epoch. */
void example_progress_show(example_progress *p, long epoch, long epochs, size_t batch, size_t batches,
                           double mean_loss, double done, double elapsed);

/* The per-class accuracy table and the confusion matrix,
 * confusion[true * classes + predicted]; `noun` names a class ("class",
 * "language") and `width` is the widest name's length. */
void example_print_confusion(const char *noun, const char *const *names, int classes, int width,
                             const long *confusion);

#endif
