// A small fork-join pool: persistent threads that wait on a generation
// counter. One job at a time (a mutex serialises callers from different
// host threads).
#include "cpu/thread_pool.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace snn {
namespace {

// True on pool threads and on a caller while it runs a job: nested
// parallel_run calls then run inline.
thread_local bool t_in_job = false;

class Pool {
public:
    void reserve(int32_t threads) {
        std::lock_guard<std::mutex> job(job_mutex_);
        // A new thread waits for jobs after the current generation, read here
        // (under the job mutex) rather than when the thread first runs: a job
        // published between the two would otherwise be missed and its caller
        // would wait forever.
        const uint64_t current = generation_.load(std::memory_order_acquire);
        while (int32_t(threads_.size()) < threads) {
            int32_t index = int32_t(threads_.size()) + 1;
            threads_.emplace_back([this, index, current] { worker_loop(index, current); });
            threads_.back().detach();  // lives for the process, never joined at exit
        }
    }

    void run(int32_t workers, WorkerFn fn, void *ctx) {
        if (workers <= 1 || t_in_job) {
            fn(ctx, 0, 1);
            return;
        }
        reserve(workers - 1);
        std::lock_guard<std::mutex> job(job_mutex_);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            fn_ = fn;
            ctx_ = ctx;
            workers_ = workers;
            pending_.store(workers - 1, std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        t_in_job = true;
        fn(ctx, 0, workers);
        t_in_job = false;
        // Spin briefly (the others finish about when we do), then sleep.
        for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
            if (spin > 2000) {
                std::unique_lock<std::mutex> lock(mutex_);
                done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
                break;
            }
            std::this_thread::yield();
        }
    }

private:
    void worker_loop(int32_t index, uint64_t seen) {
        t_in_job = true;
        for (;;) {
            // Spin a little before sleeping: back-to-back layers dispatch
            // jobs microseconds apart.
            uint64_t g = seen;
            for (int spin = 0; spin < 4000 && (g = generation_.load(std::memory_order_acquire)) == seen; ++spin)
                std::this_thread::yield();
            if (g == seen) {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return (g = generation_.load(std::memory_order_acquire)) != seen; });
            }
            WorkerFn fn;
            void *ctx;
            int32_t workers;
            {
                // Job fields and generation are published together under the
                // mutex: read them together, so a job is never run twice.
                std::lock_guard<std::mutex> lock(mutex_);
                seen = generation_.load(std::memory_order_acquire);
                fn = fn_;
                ctx = ctx_;
                workers = workers_;
            }
            if (index < workers) {
                fn(ctx, index, workers);
                if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                    std::lock_guard<std::mutex> lock(mutex_);
                    done_.notify_one();
                }
            }
        }
    }

    std::mutex job_mutex_;  // one job at a time
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::vector<std::thread> threads_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int32_t> pending_{0};
    WorkerFn fn_ = nullptr;
    void *ctx_ = nullptr;
    int32_t workers_ = 0;
};

Pool &pool() {
    static Pool *p = new Pool();  // never destroyed: its threads outlive static destruction
    return *p;
}

}  // namespace

void parallel_run(int32_t workers, WorkerFn fn, void *ctx) { pool().run(workers, fn, ctx); }

void thread_pool_reserve(int32_t n) {
    if (n > 1) pool().reserve(n - 1);
}

}  // namespace snn
