// File I/O for model files and checkpoints (see file_io.h), on the
// platform layer's files.
#include "model/file_io.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "platform/files.h"

namespace snn {
namespace {

[[noreturn]] void io_fail(const char *what, const std::string &path, int err) {
    fail(SNN_ERR_IO, "cannot %s '%s': %s", what, path.c_str(), platform::os_error_text(err).c_str());
}

// 16 hex digits from the system's entropy source, fresh on every call:
// forked processes never repeat each other's names (a generator seeded once
// would be copied into every child).
std::string random_suffix() {
    uint64_t r = 0;
    const char *step = "", *source = "";
    if (const int err = platform::random_bytes(&r, sizeof(r), &step, &source)) io_fail(step, source, err);
    char buf[17];
    snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)r);
    return buf;
}

constexpr const char *kTempInfix = ".tmp-";
constexpr size_t kTempDigits = 16;
constexpr int64_t kStaleSeconds = 60;

// name is exactly what save_atomically names a temporary file of base:
// base + ".tmp-" + 16 lowercase hex digits.
bool is_temp_name_of(const char *name, const std::string &base) {
    const size_t prefix = base.size() + std::strlen(kTempInfix);
    if (std::strlen(name) != prefix + kTempDigits || base.compare(0, base.size(), name, base.size()) != 0 ||
        std::strncmp(name + base.size(), kTempInfix, std::strlen(kTempInfix)) != 0)
        return false;
    return std::all_of(name + prefix, name + prefix + kTempDigits,
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Removes the temporary files of path that killed saves left behind: regular
// files named as save_atomically names them, unmodified for more than a
// minute (a younger one may be another process's save in progress). Best
// effort: what cannot be listed or removed stays.
void remove_stale_temp_files(const std::string &path) {
    const std::string base = platform::file_name_of(path);
    if (base.empty()) return;
    platform::remove_files_older_than(
        platform::directory_of(path), [&base](const char *name) { return is_temp_name_of(name, base); },
        kStaleSeconds);
}

// Removes the temporary file unless the save went through.
struct TempFile {
    std::string path;
    platform::File file;
    bool keep = false;
    ~TempFile() {
        file.close();
        if (!keep && !path.empty()) platform::remove_file(path);
    }
};

// What a file that is not a regular file is, for messages.
const char *file_kind(platform::FileKind kind) {
    switch (kind) {
        case platform::FileKind::directory: return "a directory";
        case platform::FileKind::fifo: return "a FIFO (named pipe)";
        case platform::FileKind::character_device: return "a character device";
        case platform::FileKind::block_device: return "a block device";
        case platform::FileKind::socket: return "a socket";
        default: return "not a regular file";
    }
}

[[noreturn]] void not_regular(const std::string &path, platform::FileKind kind) {
    fail(SNN_ERR_IO, "cannot read '%s': it is %s, not a regular file", path.c_str(), file_kind(kind));
}

}  // namespace

void save_atomically(const std::string &path, const std::function<void(const ByteSink &)> &produce) {
    remove_stale_temp_files(path);
    TempFile tmp;
    for (int attempt = 0; !tmp.file.is_open(); ++attempt) {
        std::string candidate = path + kTempInfix + random_suffix();
        const int err = platform::create_new_file(candidate, tmp.file);
        if (err == 0)
            tmp.path = candidate;
        else if (!platform::already_exists(err) || attempt == 16)
            io_fail("create a temporary file next to", path, err);
    }
    produce([&](const void *data, size_t bytes) {
        if (const int err = platform::write_all(tmp.file, data, bytes)) io_fail("write", tmp.path, err);
    });
    if (const int err = platform::sync(tmp.file)) io_fail("sync", tmp.path, err);
    if (const int err = tmp.file.close()) io_fail("close", tmp.path, err);
    if (const int err = platform::replace_file(tmp.path, path)) io_fail("rename the temporary file to", path, err);
    tmp.keep = true;
    // Make the rename itself durable.
    if (const int err = platform::sync_directory_of(path)) io_fail("sync the directory of", path, err);
}

InputFile::InputFile(const std::string &path) : path_(path) {
    const platform::OpenedForReading opened = platform::open_for_reading(path, file_);
    if (opened.kind != platform::FileKind::regular) not_regular(path, opened.kind);
    if (opened.error != 0) io_fail(opened.step, path, opened.error);
    size_ = opened.size;
}

InputFile::~InputFile() = default;

void InputFile::read(uint64_t offset, void *dst, size_t bytes) const {
    char *p = static_cast<char *>(dst);
    while (bytes > 0) {
        size_t got = 0;
        if (const int err = platform::read_at(file_, offset, p, bytes, &got)) io_fail("read", path_, err);
        if (got == 0) fail(SNN_ERR_IO, "cannot read '%s': the file shrank while it was read", path_.c_str());
        p += got;
        offset += got;
        bytes -= got;
    }
}

}  // namespace snn
