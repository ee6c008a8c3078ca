// POSIX file I/O for model files and checkpoints (see file_io.h).
#include "model/file_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "common/error.h"

namespace snn {
namespace {

[[noreturn]] void io_fail(const char *what, const std::string &path, int err) {
    fail(SNN_ERR_IO, "cannot %s '%s': %s", what, path.c_str(), std::strerror(err));
}

// 16 hex digits from the kernel's entropy source, fresh on every call: forked
// processes never repeat each other's names (a generator seeded once would
// be copied into every child).
std::string random_suffix() {
    uint64_t r = 0;
    ssize_t got = -1;
    do {
        got = getrandom(&r, sizeof(r), GRND_NONBLOCK);
    } while (got < 0 && errno == EINTR);
    if (got != ssize_t(sizeof(r))) {  // no getrandom(2), or its pool not yet ready
        const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd < 0) io_fail("open", "/dev/urandom", errno);
        do {
            got = read(fd, &r, sizeof(r));
        } while (got < 0 && errno == EINTR);
        const int err = errno;
        close(fd);
        if (got != ssize_t(sizeof(r))) io_fail("read", "/dev/urandom", got < 0 ? err : EIO);
    }
    char buf[17];
    snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)r);
    return buf;
}

constexpr const char *kTempInfix = ".tmp-";
constexpr size_t kTempDigits = 16;
constexpr time_t kStaleSeconds = 60;

// The directory part of path ("." or "/" when it has none).
std::string directory_of(const std::string &path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

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
    const size_t slash = path.find_last_of('/');
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.empty()) return;
    DIR *dir = opendir(directory_of(path).c_str());
    if (!dir) return;
    const time_t now = time(nullptr);
    while (const dirent *e = readdir(dir)) {
        if (!is_temp_name_of(e->d_name, base)) continue;
        struct stat st;
        if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            now - st.st_mtime > kStaleSeconds)
            unlinkat(dirfd(dir), e->d_name, 0);
    }
    closedir(dir);
}

// Removes the temporary file unless the save went through.
struct TempFile {
    std::string path;
    int fd = -1;
    bool keep = false;
    ~TempFile() {
        if (fd >= 0) close(fd);
        if (!keep && !path.empty()) unlink(path.c_str());
    }
};

void write_all(int fd, const void *data, size_t bytes, const std::string &path) {
    const char *p = static_cast<const char *>(data);
    while (bytes > 0) {
        ssize_t w = write(fd, p, bytes);
        if (w < 0) {
            if (errno == EINTR) continue;
            io_fail("write", path, errno);
        }
        p += w;
        bytes -= size_t(w);
    }
}

// What a file that is not a regular file is, for messages.
const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

[[noreturn]] void not_regular(const std::string &path, mode_t mode) {
    fail(SNN_ERR_IO, "cannot read '%s': it is %s, not a regular file", path.c_str(), file_kind(mode));
}

}  // namespace

void save_atomically(const std::string &path, const std::function<void(const ByteSink &)> &produce) {
    remove_stale_temp_files(path);
    TempFile tmp;
    for (int attempt = 0; tmp.fd < 0; ++attempt) {
        std::string candidate = path + kTempInfix + random_suffix();
        int fd = open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            tmp.path = candidate;
            tmp.fd = fd;
        } else if (errno != EEXIST || attempt == 16) {
            io_fail("create a temporary file next to", path, errno);
        }
    }
    produce([&](const void *data, size_t bytes) { write_all(tmp.fd, data, bytes, tmp.path); });
    if (fsync(tmp.fd) != 0) io_fail("sync", tmp.path, errno);
    const int fd = tmp.fd;
    tmp.fd = -1;
    if (close(fd) != 0) io_fail("close", tmp.path, errno);
    if (rename(tmp.path.c_str(), path.c_str()) != 0) io_fail("rename the temporary file to", path, errno);
    tmp.keep = true;
    // Make the rename itself durable. A directory that cannot be opened for
    // reading (permissions) is skipped: the file is already in place.
    int dfd = open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        const int rc = fsync(dfd), err = errno;
        close(dfd);
        if (rc != 0 && err != EINVAL) io_fail("sync the directory of", path, err);
    }
}

InputFile::InputFile(const std::string &path) : path_(path) {
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) not_regular(path, st.st_mode);
    fd_ = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) io_fail("open", path, errno);
    if (fstat(fd_, &st) != 0) {
        const int err = errno;
        close(fd_);
        io_fail("stat", path, err);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd_);
        not_regular(path, st.st_mode);
    }
    size_ = uint64_t(st.st_size);
}

InputFile::~InputFile() { close(fd_); }

void InputFile::read(uint64_t offset, void *dst, size_t bytes) const {
    char *p = static_cast<char *>(dst);
    while (bytes > 0) {
        const ssize_t r = pread(fd_, p, bytes, off_t(offset));
        if (r < 0) {
            if (errno == EINTR) continue;
            io_fail("read", path_, errno);
        }
        if (r == 0) fail(SNN_ERR_IO, "cannot read '%s': the file shrank while it was read", path_.c_str());
        p += r;
        offset += uint64_t(r);
        bytes -= size_t(r);
    }
}

}  // namespace snn
