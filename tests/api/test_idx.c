/* The Fashion-MNIST example's IDX reader: small IDX files, plain and
 * gzip-compressed, are written to a temporary directory and read back; each
 * malformed file gives its own status and a message naming the problem. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "idx.h"

static int failures = 0;

#define EXPECT(cond)                                                          \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                       \
        }                                                                     \
    } while (0)

static char dir[256];
static char error[512];

/* A path inside the test's temporary directory. */
static const char *path_of(const char *name) {
    static char paths[8][512];
    static int next = 0;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

/* Writes bytes to dir/name, gzip-compressed when the name ends in .gz. */
static const char *write_file(const char *name, const unsigned char *bytes, size_t n) {
    const char *path = path_of(name);
    size_t len = strlen(name);
    if (len > 3 && !strcmp(name + len - 3, ".gz")) {
        gzFile f = gzopen(path, "wb");
        if (!f || gzwrite(f, bytes, (unsigned)n) != (int)n || gzclose(f) != Z_OK) {
            fprintf(stderr, "cannot write %s\n", path);
            exit(1);
        }
    } else {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(bytes, 1, n, f) != n || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            exit(1);
        }
    }
    return path;
}

/* Two 2x3 images: header (magic 0x00000803, sizes 2, 2, 3), then 12 pixels. */
static const unsigned char images_idx[] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3,
                                           0, 51, 102, 153, 204, 255,
                                           255, 0, 0, 0, 0, 17};
/* Two labels: magic 0x00000801, size 2, then 7 and 3. */
static const unsigned char labels_idx[] = {0, 0, 8, 1, 0, 0, 0, 2, 7, 3};

static void test_reads_plain_and_gzipped_images(void) {
    const char *names[] = {"images", "images.gz"};
    for (int k = 0; k < 2; ++k) {
        const char *path = write_file(names[k], images_idx, sizeof images_idx);
        float *images = NULL;
        size_t count = 0;
        EXPECT(idx_read_images(path, 2, 3, &images, &count, error, sizeof error) == IDX_OK);
        EXPECT(count == 2);
        const float expected[12] = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f,
                                    1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 17.0f / 255.0f};
        for (int i = 0; images && i < 12; ++i) EXPECT(images[i] == expected[i]);
        free(images);
    }
}

static void test_reads_plain_and_gzipped_labels(void) {
    const char *names[] = {"labels", "labels.gz"};
    for (int k = 0; k < 2; ++k) {
        const char *path = write_file(names[k], labels_idx, sizeof labels_idx);
        int32_t *labels = NULL;
        size_t count = 0;
        EXPECT(idx_read_labels(path, 10, &labels, &count, error, sizeof error) == IDX_OK);
        EXPECT(count == 2);
        EXPECT(labels && labels[0] == 7 && labels[1] == 3);
        free(labels);
    }
}

static void test_loads_a_matching_pair(void) {
    const char *images = write_file("pair-images.gz", images_idx, sizeof images_idx);
    const char *labels = write_file("pair-labels.gz", labels_idx, sizeof labels_idx);
    idx_dataset set = {0};
    EXPECT(idx_load_dataset(images, labels, 2, 3, 10, &set, error, sizeof error) == IDX_OK);
    EXPECT(set.count == 2 && set.rows == 2 && set.cols == 3);
    EXPECT(set.images && set.images[5] == 1.0f);
    EXPECT(set.labels && set.labels[1] == 3);
    idx_dataset_free(&set);
    EXPECT(set.images == NULL && set.labels == NULL && set.count == 0);
}

/* A failed read returns `status`, mentions `words` and leaves the outputs
 * untouched. */
static void expect_images_error(const char *path, idx_status status, const char *words) {
    float sentinel = 0.0f, *images = &sentinel;
    size_t count = 12345;
    error[0] = '\0';
    EXPECT(idx_read_images(path, 2, 3, &images, &count, error, sizeof error) == status);
    EXPECT(images == &sentinel && count == 12345);
    if (!strstr(error, words)) {
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", error, words);
        ++failures;
    }
}

static void test_missing_file(void) {
    const char *path = path_of("no-such-file.gz");
    expect_images_error(path, IDX_ERR_OPEN, "cannot open");
    expect_images_error(path, IDX_ERR_OPEN, "no-such-file.gz");
}

static void test_wrong_magic(void) {
    unsigned char bytes[sizeof images_idx];
    memcpy(bytes, images_idx, sizeof bytes);
    bytes[2] = 0x0D; /* float32 data: not what the reader handles */
    expect_images_error(write_file("float-images", bytes, sizeof bytes), IDX_ERR_MAGIC,
                        "bad magic number 0x00000d03, expected 0x00000803");
    const unsigned char text[] = "hello, world\n";
    expect_images_error(write_file("text.gz", text, sizeof text), IDX_ERR_MAGIC, "bad magic");
}

static void test_wrong_dimensions(void) {
    /* A labels file where images are expected. */
    expect_images_error(write_file("labels-as-images", labels_idx, sizeof labels_idx),
                        IDX_ERR_DIMENSIONS, "has 1 dimension, expected 3");
    /* Images of 3x2 where 2x3 are expected. */
    unsigned char bytes[sizeof images_idx];
    memcpy(bytes, images_idx, sizeof bytes);
    bytes[11] = 3;
    bytes[15] = 2;
    expect_images_error(write_file("transposed.gz", bytes, sizeof bytes), IDX_ERR_DIMENSIONS,
                        "holds 2 images of 3x2 pixels, expected at least one image of 2x3");
}

static void test_truncated(void) {
    /* The header announces 12 pixels; 11 follow. */
    expect_images_error(write_file("short", images_idx, sizeof images_idx - 1),
                        IDX_ERR_TRUNCATED, "announces 12 data bytes, the file holds 11");
    expect_images_error(write_file("short.gz", images_idx, sizeof images_idx - 1),
                        IDX_ERR_TRUNCATED, "announces 12 data bytes, the file holds 11");
    /* The file ends inside the sizes of the dimensions. */
    expect_images_error(write_file("header-only.gz", images_idx, 10), IDX_ERR_TRUNCATED,
                        "ends inside the header");
    expect_images_error(write_file("empty", images_idx, 0), IDX_ERR_TRUNCATED,
                        "ends inside the header");
}

static void test_truncated_gzip_stream(void) {
    /* A gzip file cut short: its compressed stream ends before its data. */
    const char *whole = write_file("cut.gz", images_idx, sizeof images_idx);
    FILE *f = fopen(whole, "rb");
    unsigned char compressed[256];
    size_t n = f ? fread(compressed, 1, sizeof compressed, f) : 0;
    if (f) fclose(f);
    EXPECT(n > 12);
    expect_images_error(write_file("cut", compressed, n - 12), IDX_ERR_TRUNCATED, "truncated");
}

static void test_label_count_mismatch(void) {
    const unsigned char three_labels[] = {0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 3};
    const char *images = write_file("m-images", images_idx, sizeof images_idx);
    const char *labels = write_file("m-labels.gz", three_labels, sizeof three_labels);
    idx_dataset set = {0};
    EXPECT(idx_load_dataset(images, labels, 2, 3, 10, &set, error, sizeof error) ==
           IDX_ERR_COUNT_MISMATCH);
    EXPECT(strstr(error, "holds 2 images but") && strstr(error, "holds 3 labels"));
    EXPECT(set.images == NULL && set.labels == NULL);
}

static void test_label_out_of_range(void) {
    const unsigned char bad[] = {0, 0, 8, 1, 0, 0, 0, 2, 4, 10};
    int32_t *labels = NULL;
    size_t count = 0;
    EXPECT(idx_read_labels(write_file("bad-labels", bad, sizeof bad), 10, &labels, &count, error,
                           sizeof error) == IDX_ERR_LABEL);
    EXPECT(strstr(error, "label 10 of sample 1 is outside [0, 10)"));
    EXPECT(labels == NULL && count == 0);
}

#ifdef _WIN32
#include <direct.h>
#include <process.h>
/* Windows has no mkdtemp: a directory named by the process id, under TEMP. */
static int make_dir(void) {
    const char *tmp = getenv("TEMP");
    for (int k = 0; k < 100; ++k) {
        snprintf(dir, sizeof dir, "%s\\snn-idx-%d-%d", tmp && *tmp ? tmp : ".", _getpid(), k);
        if (_mkdir(dir) == 0) return 1;
    }
    return 0;
}
#else
static int make_dir(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/snn-idx-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(dir) != NULL;
}
#endif

int main(void) {
    if (!make_dir()) {
        perror("a temporary directory");
        return 1;
    }

    test_reads_plain_and_gzipped_images();
    test_reads_plain_and_gzipped_labels();
    test_loads_a_matching_pair();
    test_missing_file();
    test_wrong_magic();
    test_wrong_dimensions();
    test_truncated();
    test_truncated_gzip_stream();
    test_label_count_mismatch();
    test_label_out_of_range();

    const char *written[] = {"images", "images.gz", "labels", "labels.gz", "pair-images.gz",
                             "pair-labels.gz", "float-images", "text.gz", "labels-as-images",
                             "transposed.gz", "short", "short.gz", "header-only.gz", "empty",
                             "cut.gz", "cut", "m-images", "m-labels.gz", "bad-labels"};
    for (size_t i = 0; i < sizeof written / sizeof *written; ++i) remove(path_of(written[i]));
    rmdir(dir);

    if (failures) fprintf(stderr, "%d expectation(s) failed\n", failures);
    return failures ? 1 : 0;
}
