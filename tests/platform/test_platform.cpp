// The platform layer (lib/platform) on its own: UTF-8 and UTF-16, paths,
// files, the module's own path, entropy, aligned memory and threads. Plain
// checks, no test framework, so the same program runs on Linux and, built
// with mingw-w64, on Windows (or under Wine). Prints each failure; the exit
// status is the number of failures (0: all passed).
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "platform/dynamic_library.h"
#include "platform/files.h"
#include "platform/memory.h"
#include "platform/threads.h"
#include "platform/unicode.h"

namespace fs = std::filesystem;
using namespace snn::platform;

static int failures = 0;
#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                    \
        }                                                                  \
    } while (0)

static void utf8_converts_to_utf16_and_back() {
    std::u16string out;
    CHECK(utf8_to_utf16("model.snn", &out) && out == u"model.snn");
    // 2, 3 and 4 bytes: e acute, the euro sign, U+1F600 (a surrogate pair).
    CHECK(utf8_to_utf16("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", &out));
    CHECK(out == std::u16string({char16_t(0x00E9), char16_t(0x20AC), char16_t(0xD83D), char16_t(0xDE00)}));
    CHECK(utf16_to_utf8(out) == "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    CHECK(utf8_to_utf16("", &out) && out.empty());
}

static void invalid_utf8_is_refused() {
    const char *bad[] = {
        "\x80",              // a continuation byte without a lead
        "a\xC3",             // a sequence cut short
        "\xC3(",             // a lead without its continuation
        "\xC0\xAF",          // an overlong '/'
        "\xE0\x80\xAF",      // an overlong '/' in three bytes
        "\xED\xA0\x80",      // a surrogate, U+D800
        "\xF4\x90\x80\x80",  // past U+10FFFF
        "\xFF",              // never in UTF-8
    };
    for (const char *text : bad) {
        std::u16string out = u"kept";
        CHECK(!utf8_to_utf16(text, &out));
        CHECK(out == u"kept");
    }
}

static void unpaired_surrogates_become_replacement_characters() {
    CHECK(utf16_to_utf8(std::u16string(1, char16_t(0xD800))) == "\xEF\xBF\xBD");
    CHECK(utf16_to_utf8(std::u16string({char16_t(0xDC00), u'a'})) == "\xEF\xBF\xBD" "a");
}

static void paths_split_at_the_last_separator() {
    CHECK(directory_of("model.snn") == ".");
    CHECK(file_name_of("model.snn") == "model.snn");
    CHECK(directory_of("/model.snn") == "/");
    CHECK(directory_of("runs/a/model.snn") == "runs/a");
    CHECK(file_name_of("runs/a/model.snn") == "model.snn");
#ifdef _WIN32
    CHECK(directory_of("C:\\runs\\model.snn") == "C:\\runs");
    CHECK(directory_of("C:\\model.snn") == "C:\\");
    CHECK(directory_of("C:model.snn") == "C:");
    CHECK(file_name_of("C:model.snn") == "model.snn");
    CHECK(file_name_of("runs\\model.snn") == "model.snn");
#endif
}

static std::string read_all(const std::string &path, OpenedForReading *opened) {
    File file;
    *opened = open_for_reading(path, file);
    if (opened->error != 0 || opened->kind != FileKind::regular) return "";
    std::string text(size_t(opened->size), '\0');
    size_t got = 0;
    CHECK(read_at(file, 0, &text[0], text.size(), &got) == 0 && got == text.size());
    CHECK(read_at(file, opened->size, &text[0], 1, &got) == 0 && got == 0);  // the end
    return text;
}

static void a_new_file_is_written_synced_and_renamed_over_another(const fs::path &dir) {
    const std::string target = (dir / "model.snn").string(), tmp = (dir / "model.snn.tmp").string();
    {
        File f;
        CHECK(create_new_file(target, f) == 0);
        CHECK(write_all(f, "old", 3) == 0);
    }
    File f;
    CHECK(create_new_file(tmp, f) == 0);
    File again;
    const int err = create_new_file(tmp, again);
    CHECK(err != 0 && already_exists(err) && !again.is_open());
    CHECK(write_all(f, "new contents", 12) == 0);
    CHECK(sync(f) == 0);
    CHECK(f.close() == 0 && !f.is_open());
    CHECK(replace_file(tmp, target) == 0);
    CHECK(sync_directory_of(target) == 0);
    CHECK(!exists(tmp) && exists(target));
    OpenedForReading opened;
    CHECK(read_all(target, &opened) == "new contents");
    CHECK(opened.size == 12);
    CHECK(remove_file(target) == 0 && !exists(target));
}

static void only_regular_files_are_opened_for_reading(const fs::path &dir) {
    File f;
    OpenedForReading r = open_for_reading(dir.string(), f);
    CHECK(r.kind == FileKind::directory && r.error == 0 && !f.is_open());
    r = open_for_reading((dir / "missing").string(), f);
    CHECK(r.error != 0 && strcmp(r.step, "open") == 0 && !f.is_open());
    CHECK(!os_error_text(r.error).empty());
}

static void paths_are_utf8(const fs::path &dir) {
    const std::string name = "mod\xC3\xA8le \xE2\x82\xAC.snn";  // "modèle €.snn"
    const std::string path = dir.string() + "/" + name;
    {
        File f;
        CHECK(create_new_file(path, f) == 0);
    }
    CHECK(fs::exists(dir / fs::u8path(name)));
    CHECK(exists(path) && remove_file(path) == 0 && !exists(path));
#ifdef _WIN32
    File f;
    CHECK(create_new_file(dir.string() + "/bad\xC3(.snn", f) == kInvalidUtf8Path);
    CHECK(os_error_text(kInvalidUtf8Path) == "the path is not valid UTF-8");
#endif
}

static void stale_files_of_a_name_are_removed(const fs::path &dir) {
    const auto old = fs::file_time_type::clock::now() - std::chrono::minutes(5);
    for (const char *name : {"old.match", "new.match", "old.other"}) {
        File f;
        CHECK(create_new_file((dir / name).string(), f) == 0);
    }
    fs::last_write_time(dir / "old.match", old);
    fs::last_write_time(dir / "old.other", old);
    fs::create_directory(dir / "dir.match");
    std::error_code ignored;  // Wine cannot set a directory's time
    fs::last_write_time(dir / "dir.match", old, ignored);
    remove_files_older_than(
        dir.string(), [](const char *name) { return strstr(name, ".match") != nullptr; }, 60);
    CHECK(!fs::exists(dir / "old.match"));
    CHECK(fs::exists(dir / "new.match"));  // younger than a minute
    CHECK(fs::exists(dir / "old.other"));  // another name
    CHECK(fs::exists(dir / "dir.match"));  // not a regular file
}

static void random_bytes_differ_between_calls() {
    uint64_t a = 0, b = 0;
    const char *step = "", *source = "";
    CHECK(random_bytes(&a, sizeof a, &step, &source) == 0);
    CHECK(random_bytes(&b, sizeof b, &step, &source) == 0);
    CHECK(a != b);
}

static void the_own_module_is_this_program(const char *argv0) {
    // This program links snn statically: its own module is the executable.
    const std::string &path = own_module_path();
    std::string name = file_name_of(argv0);
#ifdef _WIN32
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".exe") != 0) name += ".exe";
#endif
    CHECK(!path.empty() && file_name_of(path) == name);
    CHECK(own_module_directory() == path.substr(0, path.size() - name.size()));
#ifdef _WIN32
    CHECK(shared_library_file_name("snn_cuda") == "snn_cuda.dll");
#else
    CHECK(shared_library_file_name("snn_cuda") == "libsnn_cuda.so");
#endif
    std::string reason;
    CHECK(load_library((fs::path(own_module_directory()) / "no_such_library").string(), &reason) == nullptr);
    CHECK(!reason.empty());
}

static void aligned_memory_is_aligned() {
    for (size_t bytes : {size_t(0), size_t(1), size_t(1000)}) {
        void *p = aligned_allocate(64, bytes);
        CHECK(p != nullptr && uintptr_t(p) % 64 == 0);
        aligned_free(p);
    }
}

static std::atomic<int> g_ran{0};

static void *count_run(void *) {
    g_ran.fetch_add(1);
    return nullptr;
}

static void detached_threads_run() {
    for (int i = 0; i < 4; ++i) CHECK(start_detached_thread(count_run, nullptr) == 0);
    for (int wait = 0; wait < 5000 && g_ran.load() < 4; ++wait) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(g_ran.load() == 4);
    CHECK(strlen(thread_start_call()) > 0);
}

int main(int argc, char **argv) {
    (void)argc;
    const fs::path dir = fs::temp_directory_path() / ("snn_platform_" + std::to_string(uintptr_t(&failures) & 0xFFFFFF));
    fs::remove_all(dir);
    fs::create_directories(dir);
    utf8_converts_to_utf16_and_back();
    invalid_utf8_is_refused();
    unpaired_surrogates_become_replacement_characters();
    paths_split_at_the_last_separator();
    a_new_file_is_written_synced_and_renamed_over_another(dir);
    only_regular_files_are_opened_for_reading(dir);
    paths_are_utf8(dir);
    stale_files_of_a_name_are_removed(dir);
    random_bytes_differ_between_calls();
    the_own_module_is_this_program(argv[0]);
    aligned_memory_is_aligned();
    detached_threads_run();
    fs::remove_all(dir);
    printf("platform: %d failures\n", failures);
    return failures;
}
