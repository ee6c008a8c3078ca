#include "alloc_counter.h"

#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_int counting;
static atomic_size_t count;

static void note(void) {
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
}

void *malloc(size_t n) {
    note();
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
    note();
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    note();
    return __libc_realloc(p, n);
}
void *memalign(size_t align, size_t n) {
    note();
    return __libc_memalign(align, n);
}
void *aligned_alloc(size_t align, size_t n) {
    note();
    return __libc_memalign(align, n);
}
int posix_memalign(void **out, size_t align, size_t n) {
    note();
    void *p = __libc_memalign(align, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}
void free(void *p) { __libc_free(p); }

void alloc_counter_start(void) {
    atomic_store(&count, 0);
    atomic_store(&counting, 1);
}

size_t alloc_counter_stop(void) {
    atomic_store(&counting, 0);
    return atomic_load(&count);
}
