/* fork() after the thread pool has run: a forked child has only the thread
 * that called fork, so the library must start its pool threads again there
 * instead of waiting for ones that do not exist. The child's forward passes
 * (2 threads) must match the parent's bit for bit, the parent must keep
 * working after the child exits, and a fork taken while another host thread
 * is inside parallel forward passes (and failing calls that log) must give
 * a working child too. Every child runs under alarm(), so a hang fails the
 * test instead of stalling it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "snn.h"
#include "thread_count.h"

/* AddressSanitizer's allocator (as of GCC 12) takes no lock around fork():
 * a child forked while another thread is inside malloc inherits that lock
 * held and deadlocks in its next malloc (ASan's own, when it starts a
 * thread). The forks from a busy parent are skipped under it; every other
 * part runs. */
#if defined(__SANITIZE_ADDRESS__)
#define SNN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SNN_TEST_ASAN 1
#endif
#endif
#ifndef SNN_TEST_ASAN
#define SNN_TEST_ASAN 0
#endif

static int failures = 0;
#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK(%s) failed (pid %d): %s\n", __FILE__,        \
                    __LINE__, #cond, (int)getpid(), snn_last_error());                 \
            ++failures;                                                                \
        }                                                                              \
    } while (0)

/* 16 x 256 x 256 multiply-adds per dense layer: large enough for the
 * matrix products to be split over both threads. */
static const char *kSpec = "input 256; dense 256 relu; dense 256 tanh; dense 10";
enum { BATCH = 16, INPUTS = 256, OUTPUTS = 10, CHILD_SECONDS = 10 };

struct net {
    snn_model *model;
    snn_forward_cache *cache;
    float inputs[BATCH * INPUTS];
};

static void net_make(struct net *n, uint64_t seed) {
    memset(n, 0, sizeof *n);
    for (int i = 0; i < BATCH * INPUTS; ++i)
        n->inputs[i] = (float)((i * 7919 + (int)seed * 31) % 101) / 50.0f - 1.0f;
    CHECK(snn_model_create(kSpec, &n->model) == SNN_OK);
    CHECK(snn_model_init(n->model, seed) == SNN_OK);
    CHECK(snn_preallocate(n->model, BATCH, &n->cache) == SNN_OK);
}

static void net_destroy(struct net *n) {
    snn_forward_cache_destroy(n->cache);
    snn_model_destroy(n->model);
}

/* One forward pass from n->inputs into out. */
static int net_forward(struct net *n, float *out) {
    return snn_set_inputs(n->cache, n->inputs, BATCH * INPUTS) == SNN_OK &&
           snn_forward(n->cache, n->model) == SNN_OK &&
           snn_get_outputs(n->cache, out, BATCH * OUTPUTS) == SNN_OK;
}

static int logged = 0;
static void count_log(void *user, int32_t level, const char *message) {
    (void)user;
    (void)level;
    (void)message;
    __atomic_add_fetch(&logged, 1, __ATOMIC_RELAXED);
}

/* A failing call; the installed callback logs it. */
static int fail_a_call(void) {
    snn_model *m = NULL;
    return snn_model_create("input 4; dense 3 rleu", &m) == SNN_ERR_SPEC && m == NULL;
}

/* In a child: forward passes that must equal `expected` exactly, on the
 * library's restarted pool (2 threads: this one and one pool thread; OpenBLAS
 * stays single-threaded and starts none), and a failure that is logged.
 * Returns the child's exit code. */
static int child_forwards(struct net *n, const float *expected) {
    alarm(CHILD_SECONDS);
    CHECK(thread_count() == 1);
    const int logged_before = __atomic_load_n(&logged, __ATOMIC_RELAXED);
    CHECK(fail_a_call());
    CHECK(__atomic_load_n(&logged, __ATOMIC_RELAXED) == logged_before + 1);
    float out[BATCH * OUTPUTS];
    for (int pass = 0; pass < 5; ++pass) {
        memset(out, 0, sizeof out);
        CHECK(net_forward(n, out));
        CHECK(memcmp(out, expected, sizeof out) == 0);
    }
    CHECK(thread_count() == 2);
    CHECK(snn_get_num_threads() == 2);
    return failures == 0 ? 0 : 1;
}

/* Waits for a child; it must have exited with code 0 (a child killed by its
 * alarm hung). Returns whether it did. */
static int expect_child_ok(pid_t pid, const char *what) {
    int status = 0;
    CHECK(pid > 0);
    if (pid <= 0) return 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status))
        fprintf(stderr, "%s: child killed by signal %d%s\n", what, WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (it hung)" : "");
    const int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    CHECK(ok);
    return ok;
}

/* Forward passes and failing calls (which take the log callback's lock) on
 * a second host thread until told to stop; every pass must equal the first. */
struct busy {
    struct net net;
    volatile int stop;
    int passes, mismatches;
};

static void *busy_main(void *arg) {
    struct busy *b = (struct busy *)arg;
    float first[BATCH * OUTPUTS], out[BATCH * OUTPUTS];
    memset(first, 0, sizeof first);
    if (!net_forward(&b->net, first)) b->mismatches++;
    while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
        if (!net_forward(&b->net, out) || memcmp(out, first, sizeof out) != 0) b->mismatches++;
        if (!fail_a_call()) b->mismatches++;
        __atomic_add_fetch(&b->passes, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

int main(void) {
    CHECK(snn_set_num_threads(2) == SNN_OK);
    CHECK(snn_set_log_callback(count_log, NULL) == SNN_OK);
    struct net n;
    net_make(&n, 7);
    float expected[BATCH * OUTPUTS], out[BATCH * OUTPUTS];
    CHECK(net_forward(&n, expected));

    /* A child (and a grandchild forked from it after its pool restarted)
     * computes exactly what the parent computed. */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int code = child_forwards(&n, expected);
        fflush(NULL);
        pid_t grandchild = fork();
        if (grandchild == 0) _exit(child_forwards(&n, expected));
        expect_child_ok(grandchild, "grandchild");
        CHECK(net_forward(&n, out) && memcmp(out, expected, sizeof out) == 0);
        _exit(code == 0 && failures == 0 ? 0 : 1);
    }
    expect_child_ok(pid, "child");

    /* The parent's pool is untouched by the fork. */
    for (int pass = 0; pass < 5; ++pass) {
        memset(out, 0, sizeof out);
        CHECK(net_forward(&n, out));
        CHECK(memcmp(out, expected, sizeof out) == 0);
    }

    /* Forks while another host thread keeps the pool busy: the fork waits
     * for the running job to end, and each child starts a fresh pool. */
    if (SNN_TEST_ASAN) {
        net_destroy(&n);
        printf("%s\n", failures ? "FAILED"
                                 : "forked children run the pool and match the parent "
                                   "(forks from a busy parent skipped under AddressSanitizer)");
        return failures ? 1 : 0;
    }
    struct busy *b = (struct busy *)calloc(1, sizeof *b);
    net_make(&b->net, 11);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, busy_main, b) == 0);
    for (int round = 0, ok = 1; round < 20 && ok; ++round) {
        while (__atomic_load_n(&b->passes, __ATOMIC_ACQUIRE) < 3 * (round + 1)) usleep(100);
        fflush(NULL);
        pid = fork();
        if (pid == 0) _exit(child_forwards(&n, expected));
        ok = expect_child_ok(pid, "child of a busy parent");
    }
    __atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(b->mismatches == 0);
    CHECK(net_forward(&n, out) && memcmp(out, expected, sizeof out) == 0);
    net_destroy(&b->net);
    free(b);

    net_destroy(&n);
    printf("%s\n", failures ? "FAILED" : "forked children run the pool and match the parent");
    return failures ? 1 : 0;
}
