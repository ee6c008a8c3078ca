// Replays files through a fuzz target without libFuzzer: each argument is a
// file or a directory of files. Used by the normal test suite to keep every
// seed and every input that once crashed (regressions/) working.
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path.c_str());
        return 1;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
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
