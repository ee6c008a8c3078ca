// POSIX file I/O for model files and checkpoints: atomic replacement of a
// file (temporary file, fsync, rename, fsync of the directory) and reading a
// regular file by offset. Knows nothing of the file format; every failure is
// an SNN_ERR_IO naming the path and the reason.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <functional>
#include <string>

namespace snn {

// Receives the file's bytes in order.
using ByteSink = std::function<void(const void *data, size_t bytes)>;

// Writes path.tmp-<16 random hex digits> through `produce`, fsyncs it,
// renames it over path and fsyncs the directory. On failure (an exception
// from produce included) the temporary file is removed and path untouched.
// Temporary files of path that killed saves left, unmodified for more than
// a minute, are removed first.
void save_atomically(const std::string &path, const std::function<void(const ByteSink &)> &produce);

// A regular file opened for reading. Anything else is refused before it is
// read: stat first, so a FIFO or a device is never opened; O_NONBLOCK, so a
// FIFO put in its place meanwhile cannot block open(); fstat to be sure.
class InputFile {
public:
    explicit InputFile(const std::string &path);
    ~InputFile();
    InputFile(const InputFile &) = delete;
    InputFile &operator=(const InputFile &) = delete;

    uint64_t size() const { return size_; }

    // Exactly `bytes` bytes at `offset` (SNN_ERR_IO if the file shrank).
    void read(uint64_t offset, void *dst, size_t bytes) const;

private:
    std::string path_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

}  // namespace snn
