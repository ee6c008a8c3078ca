// Replays files through a fuzz target without libFuzzer: each argument is a
// file or a directory of files. Used by the normal test suite to keep every
// seed and every input that once crashed (regressions/) working. A file
// whose name starts with "bad-" is a crafted input the target must refuse
// (its main call must return an error status).
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path.c_str());
        return 1;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    const size_t slash = path.find_last_of('/');
    if (path.compare(slash == std::string::npos ? 0 : slash + 1, 4, "bad-") == 0 && fuzz_last_status == SNN_OK) {
        fprintf(stderr, "%s: accepted, but a bad- input must be refused\n", path.c_str());
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    int files = 0, errors = 0;
    for (int i = 1; i < argc; ++i) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "cannot find %s\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            errors += replay_file(argv[i]);
            ++files;
            continue;
        }
        DIR *d = opendir(argv[i]);
        while (dirent *e = d ? readdir(d) : nullptr) {
            if (e->d_name[0] == '.') continue;
            errors += replay_file(std::string(argv[i]) + "/" + e->d_name);
            ++files;
        }
        if (d) closedir(d);
    }
    printf("replayed %d files\n", files);
    return errors != 0 || files == 0;
}
