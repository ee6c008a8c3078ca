// The log callback is host code: it may throw (C++), leave by longjmp (as
// Julia's error handling does), or change the callback from inside itself.
// None of that may lose a status, stop later failures from being logged, or
// deadlock the next call. Each test runs under alarm(), so a deadlock fails
// it instead of stalling the suite.
#include <gtest/gtest.h>
#include <setjmp.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "snn.h"

namespace {

const char *kBadSpec = "input 4; dense 3 rleu";

// Fails one call; the spec error is the same every time.
snn_status fail_once() {
    snn_model *m = nullptr;
    const snn_status status = snn_model_create(kBadSpec, &m);
    EXPECT_EQ(m, nullptr);
    return status;
}

class LogCallback : public ::testing::Test {
protected:
    void SetUp() override { alarm(60); }
    void TearDown() override {
        snn_set_log_callback(nullptr, nullptr);
        alarm(0);
    }
};

std::atomic<int> g_calls{0};

void throwing_callback(void *, int32_t, const char *message) {
    g_calls++;
    throw std::runtime_error(std::string("host failed to log: ") + message);
}

TEST_F(LogCallback, ThrowingCallbackKeepsTheStatusAndLogsAgain) {
    g_calls = 0;
    ASSERT_EQ(snn_set_log_callback(throwing_callback, nullptr), SNN_OK);
    EXPECT_EQ(fail_once(), SNN_ERR_SPEC);
    EXPECT_EQ(g_calls.load(), 1);
    EXPECT_NE(std::string(snn_last_error()).find("rleu"), std::string::npos);
    // The next failure is logged again, here and on another thread.
    EXPECT_EQ(fail_once(), SNN_ERR_SPEC);
    EXPECT_EQ(g_calls.load(), 2);
    std::thread([] { EXPECT_EQ(fail_once(), SNN_ERR_SPEC); }).join();
    EXPECT_EQ(g_calls.load(), 3);
    // Successful calls still work.
    snn_model *m = nullptr;
    EXPECT_EQ(snn_model_create("input 4; dense 3 relu", &m), SNN_OK);
    snn_model_destroy(m);
    EXPECT_EQ(g_calls.load(), 3);
}

jmp_buf g_escape;

void longjmp_callback(void *, int32_t, const char *) {
    g_calls++;
    longjmp(g_escape, 1);
}

// Makes one failing call; returns 1 when the callback left it by longjmp.
int fail_left_by_longjmp() {
    if (setjmp(g_escape) == 0) {
        fail_once();
        return 0;
    }
    return 1;
}

TEST_F(LogCallback, CallbackLeavingByLongjmpLeavesNoLockHeld) {
    g_calls = 0;
    ASSERT_EQ(snn_set_log_callback(longjmp_callback, nullptr), SNN_OK);
    EXPECT_EQ(fail_left_by_longjmp(), 1);
    EXPECT_EQ(g_calls.load(), 1);
    EXPECT_EQ(fail_left_by_longjmp(), 1);
    EXPECT_EQ(g_calls.load(), 2);
    // The callback can still be replaced, and the next failure is logged by
    // the replacement.
    ASSERT_EQ(snn_set_log_callback(throwing_callback, nullptr), SNN_OK);
    EXPECT_EQ(fail_once(), SNN_ERR_SPEC);
    EXPECT_EQ(g_calls.load(), 3);
    EXPECT_NE(std::string(snn_last_error()).find("rleu"), std::string::npos);
}

struct Removal {
    int calls = 0;
    snn_status set_status = SNN_ERR_INTERNAL;
};

void removing_callback(void *user, int32_t, const char *) {
    auto *r = static_cast<Removal *>(user);
    r->calls++;
    r->set_status = snn_set_log_callback(nullptr, nullptr);
}

TEST_F(LogCallback, CallbackMayRemoveItself) {
    Removal r;
    ASSERT_EQ(snn_set_log_callback(removing_callback, &r), SNN_OK);
    EXPECT_EQ(fail_once(), SNN_ERR_SPEC);
    EXPECT_EQ(r.calls, 1);
    EXPECT_EQ(r.set_status, SNN_OK);
    EXPECT_EQ(fail_once(), SNN_ERR_SPEC);
    EXPECT_EQ(r.calls, 1);  // removed
}

std::vector<std::string> g_second;

void second_callback(void *, int32_t, const char *message) { g_second.emplace_back(message); }

void replacing_callback(void *user, int32_t, const char *) {
    ++*static_cast<int *>(user);
    snn_set_log_callback(second_callback, nullptr);
}

TEST_F(LogCallback, CallbackMayInstallAnother) {
    int first = 0;
    g_second.clear();
    ASSERT_EQ(snn_set_log_callback(replacing_callback, &first), SNN_OK);
    EXPECT_EQ(fail_once(), SNN_ERR_SPEC);
    EXPECT_EQ(fail_once(), SNN_ERR_SPEC);
    EXPECT_EQ(first, 1);
    ASSERT_EQ(g_second.size(), 1u);
    EXPECT_EQ(g_second[0], snn_last_error());
}

void counting_callback(void *user, int32_t, const char *) { static_cast<std::atomic<int> *>(user)->fetch_add(1); }

// Failing calls on several threads while the callback is installed and
// removed: every call keeps its status and nothing deadlocks.
TEST_F(LogCallback, CallbackChangesWhileOtherThreadsLog) {
    std::atomic<int> calls{0};
    std::atomic<bool> stop{false};
    std::atomic<int> wrong_status{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
        threads.emplace_back([&] {
            while (!stop.load()) {
                snn_model *m = nullptr;
                if (snn_model_create(kBadSpec, &m) != SNN_ERR_SPEC) wrong_status++;
            }
        });
    for (int i = 0; i < 300; ++i) {
        snn_set_log_callback(counting_callback, &calls);
        std::this_thread::yield();
        snn_set_log_callback(nullptr, nullptr);
    }
    stop = true;
    for (auto &t : threads) t.join();
    EXPECT_EQ(wrong_status.load(), 0);
    const int seen = calls.load();
    EXPECT_EQ(fail_once(), SNN_ERR_SPEC);
    EXPECT_EQ(calls.load(), seen);  // removed before the threads were joined
}

}  // namespace
