// Files on POSIX systems (see files.h).
#include "platform/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

namespace snn {
namespace platform {

struct FileAccess {
    static int fd(const File &f) { return int(f.handle_); }
    static void set(File &f, int fd) { f.handle_ = fd; }
};

namespace {

FileKind kind_of(mode_t mode) {
    if (S_ISREG(mode)) return FileKind::regular;
    if (S_ISDIR(mode)) return FileKind::directory;
    if (S_ISFIFO(mode)) return FileKind::fifo;
    if (S_ISCHR(mode)) return FileKind::character_device;
    if (S_ISBLK(mode)) return FileKind::block_device;
    if (S_ISSOCK(mode)) return FileKind::socket;
    return FileKind::other;
}

}  // namespace

std::string os_error_text(int code) { return std::strerror(code); }

File::~File() { close(); }

int File::close() {
    if (handle_ == kClosed) return 0;
    const int rc = ::close(int(handle_));
    handle_ = kClosed;
    return rc == 0 ? 0 : errno;
}

OpenedForReading open_for_reading(const std::string &path, File &file) {
    OpenedForReading r;
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        r.kind = kind_of(st.st_mode);
        return r;
    }
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        r.error = errno;
        r.step = "open";
        return r;
    }
    FileAccess::set(file, fd);
    if (fstat(fd, &st) != 0) {
        r.error = errno;
        r.step = "stat";
        file.close();
        return r;
    }
    r.kind = kind_of(st.st_mode);
    if (r.kind != FileKind::regular) {
        file.close();
        return r;
    }
    r.size = uint64_t(st.st_size);
    return r;
}

int read_at(const File &file, uint64_t offset, void *dst, size_t bytes, size_t *got) {
    ssize_t r;
    do {
        r = pread(FileAccess::fd(file), dst, bytes, off_t(offset));
    } while (r < 0 && errno == EINTR);
    if (r < 0) return errno;
    *got = size_t(r);
    return 0;
}

int create_new_file(const std::string &path, File &file) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return errno;
    FileAccess::set(file, fd);
    return 0;
}

bool already_exists(int code) { return code == EEXIST; }

int write_all(File &file, const void *data, size_t bytes) {
    const char *p = static_cast<const char *>(data);
    while (bytes > 0) {
        const ssize_t w = write(FileAccess::fd(file), p, bytes);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        p += w;
        bytes -= size_t(w);
    }
    return 0;
}

int sync(File &file) { return fsync(FileAccess::fd(file)) == 0 ? 0 : errno; }

int replace_file(const std::string &from, const std::string &to) {
    return rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

int sync_directory_of(const std::string &path) {
    const int dfd = open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return 0;
    const int rc = fsync(dfd), err = errno;
    close(dfd);
    return rc == 0 || err == EINVAL ? 0 : err;
}

int remove_file(const std::string &path) { return unlink(path.c_str()) == 0 ? 0 : errno; }

bool exists(const std::string &path) { return access(path.c_str(), F_OK) == 0; }

void remove_files_older_than(const std::string &directory, const std::function<bool(const char *name)> &matches,
                             int64_t seconds) {
    DIR *dir = opendir(directory.c_str());
    if (!dir) return;
    const time_t now = time(nullptr);
    while (const dirent *e = readdir(dir)) {
        if (!matches(e->d_name)) continue;
        struct stat st;
        if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            now - st.st_mtime > seconds)
            unlinkat(dirfd(dir), e->d_name, 0);
    }
    closedir(dir);
}

int random_bytes(void *dst, size_t bytes, const char **step, const char **source) {
    ssize_t got = -1;
    do {
        got = getrandom(dst, bytes, GRND_NONBLOCK);
    } while (got < 0 && errno == EINTR);
    if (got == ssize_t(bytes)) return 0;
    // No getrandom(2), or its pool not yet ready.
    *source = "/dev/urandom";
    const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *step = "open";
        return errno;
    }
    do {
        got = read(fd, dst, bytes);
    } while (got < 0 && errno == EINTR);
    const int err = errno;
    close(fd);
    if (got == ssize_t(bytes)) return 0;
    *step = "read";
    return got < 0 ? err : EIO;
}

}  // namespace platform
}  // namespace snn
