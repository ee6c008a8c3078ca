// File I/O for model files and checkpoints: atomic replacement of a file
// (temporary file, sync, rename, sync of the directory on POSIX) and reading
// a regular file by offset, on the platform layer's files (platform/files.h).
// Knows nothing of the file format; every failure is an SNN_ERR_IO naming
// the path and the reason.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <functional>
#include <string>

#include "platform/files.h"

namespace snn {

// Receives the file's bytes in order.
using ByteSink = std::function<void(const void *data, size_t bytes)>;

// Writes path.tmp-<16 random hex digits> through `produce`, syncs it,
// renames it over path and syncs the directory (POSIX; on Windows the rename
// writes through). On failure (an exception from produce included) the
// temporary file is removed and path untouched.
// Temporary files of path that killed saves left, unmodified for more than
// a minute, are removed first.
void save_atomically(const std::string &path, const std::function<void(const ByteSink &)> &produce);

// A regular file opened for reading. Anything else is refused before it is
// read (platform::open_for_reading says how).
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
    platform::File file_;
    uint64_t size_ = 0;
};

}  // namespace snn
