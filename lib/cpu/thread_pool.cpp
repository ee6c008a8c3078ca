// A small fork-join pool: persistent threads that wait for a job generation
// counter to change. One job at a time: callers on different host threads
// queue on job_mutex_.
//
// A job is "open" from its publication until its caller has seen every
// participant finish. A worker takes a job only while it is open, reading the
// job and its generation together under mutex_, so no job runs twice and a
// thread that starts late never runs a finished job.
//
// Shares: fn(ctx, k, workers) for k >= 1 is claimed by whichever thread gets
// to it first, a pool thread or the caller once its own share is done, so a
// pool thread that the system has not scheduled (other programs busy on the
// cores) does not hold the caller up. Each share is one fixed part of the
// work whoever runs it: results are the same. A claim names the job's
// generation, so a thread late from one job never claims a share of the next.
//
// fork() (POSIX): a child has only the thread that forked, so the pool's
// threads are gone there. Fork handlers take every lock of the pool before
// the fork (a job under way on another host thread ends first), release them
// in the parent, and in the child mark the pool as having no threads: the
// child's first parallel job starts them again.
//
// Unloading: the pool's threads are never stopped (the Pool is leaked), which
// is safe only because libsnn is linked with -z nodelete (see meson.build):
// dlclose never unmaps the code they run; on Windows snn.dll pins itself
// when loaded (platform/dynamic_library_windows.cpp). Joining them from a
// destructor of the shared object instead would run at process exit too,
// while other host threads may still be inside a job, and the CUDA plugin
// and thread-local storage keep pointers into libsnn that an unmap would
// leave dangling.
#include "cpu/thread_pool.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>
#include <thread>

#include "common/error.h"
#include "platform/threads.h"

namespace snn {
namespace {

// True on pool threads and on a caller while it runs a job: nested
// parallel_run calls then run inline.
thread_local bool t_in_job = false;

// Waits first spin on the processor's pause instruction (a few microseconds,
// no system call), then yield, then sleep.
constexpr int kPauseSpins = 4000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

class Pool {
public:
    // Threads live for the process, never joined. They are started detached
    // (platform/threads.h) and take their index themselves, so starting one
    // allocates nothing of ours that a forked child (where the thread is
    // gone) would leak.
    void reserve(int32_t threads) {
        std::lock_guard<std::mutex> lock(threads_mutex_);
        while (threads_ < threads) {
            const int err = platform::start_detached_thread(worker_main, this);
            if (err != 0)
                fail(SNN_ERR_OUT_OF_MEMORY, "cannot start pool thread %d of %d: %s returned %d", threads_ + 1,
                     threads, platform::thread_start_call(), err);
            ++threads_;
        }
    }

    // workers >= 2, outside any job (parallel_run runs the rest inline).
    void run(int32_t workers, WorkerFn fn, void *ctx) {
        reserve(workers - 1);
        std::lock_guard<std::mutex> job(job_mutex_);
        uint64_t generation;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            fn_ = fn;
            ctx_ = ctx;
            workers_ = workers;
            open_ = true;
            pending_.store(workers - 1, std::memory_order_relaxed);
            generation = generation_.load(std::memory_order_relaxed) + 1;
            claims_.store((generation & 0xFFFFFFFFu) << 32 | 1u, std::memory_order_relaxed);
            generation_.store(generation, std::memory_order_release);
        }
        wake_.notify_all();
        t_in_job = true;
        fn(ctx, 0, workers);
        for (int32_t k; (k = claim(generation, workers)) > 0;) {
            fn(ctx, k, workers);
            pending_.fetch_sub(1, std::memory_order_acq_rel);
        }
        t_in_job = false;
        // Spin briefly (the others finish about when we do), then sleep.
        for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
            if (spin < kPauseSpins) {
                cpu_relax();
                continue;
            }
            if (spin > kPauseSpins + 2000) {
                std::unique_lock<std::mutex> lock(mutex_);
                done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
                break;
            }
            std::this_thread::yield();
        }
        std::lock_guard<std::mutex> lock(mutex_);
        open_ = false;
    }

    // The fork handlers (see the top of this file). Lock order: job_mutex_,
    // threads_mutex_, mutex_; no other path holds two of them but run(),
    // which takes mutex_ under job_mutex_.
    void before_fork() {
        job_mutex_.lock();
        threads_mutex_.lock();
        mutex_.lock();
    }

    void after_fork_in_parent() {
        mutex_.unlock();
        threads_mutex_.unlock();
        job_mutex_.unlock();
    }

    // The parent's pool threads may have been waiting on the condition
    // variables, which would keep counting those waiters in the child: both
    // are made anew (the old ones are abandoned, not destroyed, as destroying
    // a condition variable with waiters is undefined).
    void after_fork_in_child() {
        threads_ = 0;
        indices_taken_.store(0, std::memory_order_relaxed);
        new (&wake_) std::condition_variable();
        new (&done_) std::condition_variable();
        mutex_.unlock();
        threads_mutex_.unlock();
        job_mutex_.unlock();
    }

private:
    static void *worker_main(void *pool) {
        Pool *p = static_cast<Pool *>(pool);
        p->worker_loop(p->indices_taken_.fetch_add(1, std::memory_order_relaxed) + 1);
        return nullptr;
    }

    // index in [1, threads_], distinct for every pool thread.
    void worker_loop(int32_t index) {
        t_in_job = true;
        uint64_t seen = 0;
        for (;;) {
            // Spin a little before sleeping: back-to-back layers publish jobs
            // microseconds apart.
            for (int spin = 0; spin < kPauseSpins + 4000 && generation_.load(std::memory_order_acquire) == seen;
                 ++spin) {
                if (spin < kPauseSpins)
                    cpu_relax();
                else
                    std::this_thread::yield();
            }
            WorkerFn fn;
            void *ctx;
            int32_t workers;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
                seen = generation_.load(std::memory_order_acquire);
                if (!open_ || index >= workers_) continue;
                fn = fn_;
                ctx = ctx_;
                workers = workers_;
            }
            for (int32_t k; (k = claim(seen, workers)) > 0;) {
                fn(ctx, k, workers);
                if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                    std::lock_guard<std::mutex> lock(mutex_);
                    done_.notify_one();
                }
            }
        }
    }

    // The next unclaimed share k in [1, workers) of job `generation`, or 0
    // when none is left (or the job is no longer that one).
    int32_t claim(uint64_t generation, int32_t workers) {
        uint64_t c = claims_.load(std::memory_order_relaxed);
        for (;;) {
            const int32_t k = int32_t(c & 0xFFFFFFFFu);
            if ((c >> 32) != (generation & 0xFFFFFFFFu) || k >= workers) return 0;
            if (claims_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_relaxed))
                return k;
        }
    }

    std::mutex threads_mutex_;  // guards threads_ (pool threads started)
    std::mutex job_mutex_;      // one job at a time
    std::mutex mutex_;          // guards the job fields below
    std::condition_variable wake_, done_;
    int32_t threads_ = 0;
    std::atomic<int32_t> indices_taken_{0};  // by pool threads as they start
    std::atomic<uint64_t> generation_{0};
    std::atomic<int32_t> pending_{0};   // shares 1.. not yet finished
    std::atomic<uint64_t> claims_{0};   // low 32 bits of the generation << 32 | the next share to claim
    WorkerFn fn_ = nullptr;
    void *ctx_ = nullptr;
    int32_t workers_ = 0;
    bool open_ = false;
};

Pool *g_pool = nullptr;

void pool_before_fork() { g_pool->before_fork(); }
void pool_after_fork_in_parent() { g_pool->after_fork_in_parent(); }
void pool_after_fork_in_child() { g_pool->after_fork_in_child(); }

Pool *make_pool() {
    Pool *p = new Pool();
    g_pool = p;
    const int err = platform::on_fork(pool_before_fork, pool_after_fork_in_parent, pool_after_fork_in_child);
    if (err != 0) {
        g_pool = nullptr;
        delete p;
        fail(SNN_ERR_OUT_OF_MEMORY, "out of memory while installing the thread pool's fork handlers");
    }
    return p;
}

Pool &pool() {
    static Pool *p = make_pool();  // never destroyed: its threads outlive static destruction
    return *p;
}

}  // namespace

// One worker, or a job inside a job, runs inline without the pool, so a
// process that never asks for more than one thread never builds it.
void parallel_run(int32_t workers, WorkerFn fn, void *ctx) {
    if (workers <= 1 || t_in_job) {
        fn(ctx, 0, 1);
        return;
    }
    pool().run(workers, fn, ctx);
}

void thread_pool_reserve(int32_t n) {
    if (n > 1) pool().reserve(n - 1);
}

}  // namespace snn
