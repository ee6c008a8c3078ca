/* The IDX reader: see idx.h for the format and the contract. */
#include "idx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#define IDX_UNSIGNED_BYTE 0x08

static idx_status fail(char *error, size_t error_size, idx_status status, const char *format,
                       ...) {
    if (error && error_size > 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(error, error_size, format, args);
        va_end(args);
    }
    return status;
}

/* Reads exactly n bytes; *got receives how many were read before an end of
 * file or an error. Returns 0 on success, else the zlib error code (Z_OK for
 * a plain end of file). */
static int read_exact(gzFile file, unsigned char *dst, size_t n, size_t *got) {
    *got = 0;
    while (*got < n) {
        size_t want = n - *got;
        if (want > (1u << 30)) want = 1u << 30;
        int r = gzread(file, dst + *got, (unsigned)want);
        if (r <= 0) {
            int code = Z_OK;
            gzerror(file, &code);
            return code == Z_OK ? Z_BUF_ERROR : code;
        }
        *got += (size_t)r;
    }
    return 0;
}

/* Opens `path`, checks the magic number and the number of dimensions, and
 * reads the sizes of the dimensions into dims. */
static idx_status open_idx(const char *path, int ndims, gzFile *out, uint32_t dims[],
                           char *error, size_t error_size) {
    gzFile file = gzopen(path, "rb");
    if (!file) return fail(error, error_size, IDX_ERR_OPEN, "%s: cannot open the file", path);

    unsigned char header[4 + 4 * 3];
    size_t header_size = 4 + 4 * (size_t)ndims, got = 0;
    int code = read_exact(file, header, 4, &got);
    if (code == Z_BUF_ERROR) {
        gzclose(file);
        return fail(error, error_size, IDX_ERR_TRUNCATED,
                    "%s: the file ends inside the header (%zu of 4 magic bytes)", path, got);
    }
    if (code != 0) {
        gzclose(file);
        return fail(error, error_size, IDX_ERR_OPEN, "%s: cannot read the file", path);
    }
    uint32_t magic = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 |
                     (uint32_t)header[2] << 8 | header[3];
    if (header[0] != 0 || header[1] != 0 || header[2] != IDX_UNSIGNED_BYTE) {
        gzclose(file);
        return fail(error, error_size, IDX_ERR_MAGIC,
                    "%s: bad magic number 0x%08x, expected 0x%08x (an IDX file of unsigned "
                    "bytes with %d dimension%s)",
                    path, magic, (unsigned)(IDX_UNSIGNED_BYTE << 8 | ndims), ndims,
                    ndims == 1 ? "" : "s");
    }
    if (header[3] != ndims) {
        gzclose(file);
        return fail(error, error_size, IDX_ERR_DIMENSIONS,
                    "%s: has %d dimension%s, expected %d (%s)", path, header[3],
                    header[3] == 1 ? "" : "s", ndims,
                    ndims == 3 ? "images: count, rows, columns" : "labels: count");
    }
    code = read_exact(file, header + 4, header_size - 4, &got);
    if (code != 0) {
        gzclose(file);
        return fail(error, error_size, IDX_ERR_TRUNCATED,
                    "%s: the file ends inside the header (%zu of %zu bytes of sizes)", path, got,
                    header_size - 4);
    }
    for (int d = 0; d < ndims; ++d) {
        const unsigned char *b = header + 4 + 4 * d;
        dims[d] = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    }
    *out = file;
    return IDX_OK;
}

/* Reads the n data bytes that follow the header into a malloc'd buffer,
 * growing it as data arrives so that a header announcing more than the file
 * holds costs no more memory than the file. */
static idx_status read_payload(gzFile file, const char *path, size_t n, unsigned char **out,
                               char *error, size_t error_size) {
    size_t capacity = n < ((size_t)1 << 20) ? n : (size_t)1 << 20, got = 0;
    unsigned char *data = malloc(capacity ? capacity : 1);
    if (!data) return fail(error, error_size, IDX_ERR_MEMORY, "%s: out of memory", path);
    while (got < n) {
        if (got == capacity) {
            capacity = capacity > n / 2 ? n : capacity * 2;
            unsigned char *bigger = realloc(data, capacity);
            if (!bigger) {
                free(data);
                return fail(error, error_size, IDX_ERR_MEMORY, "%s: out of memory", path);
            }
            data = bigger;
        }
        size_t part = 0;
        int code = read_exact(file, data + got, capacity - got, &part);
        got += part;
        if (code != 0) {
            free(data);
            if (code == Z_BUF_ERROR)
                return fail(error, error_size, IDX_ERR_TRUNCATED,
                            "%s: truncated: the header announces %zu data bytes, the file "
                            "holds %zu",
                            path, n, got);
            return fail(error, error_size, IDX_ERR_OPEN, "%s: cannot read or decompress (%s)",
                        path, gzerror(file, &code));
        }
    }
    *out = data;
    return IDX_OK;
}

idx_status idx_read_images(const char *path, int64_t rows, int64_t cols, float **images,
                           size_t *count, char *error, size_t error_size) {
    gzFile file = NULL;
    uint32_t dims[3] = {0, 0, 0};
    idx_status status = open_idx(path, 3, &file, dims, error, error_size);
    if (status != IDX_OK) return status;
    if (dims[0] == 0 || (int64_t)dims[1] != rows || (int64_t)dims[2] != cols) {
        gzclose(file);
        return fail(error, error_size, IDX_ERR_DIMENSIONS,
                    "%s: holds %u images of %ux%u pixels, expected at least one image of "
                    "%lldx%lld",
                    path, dims[0], dims[1], dims[2], (long long)rows, (long long)cols);
    }
    size_t pixels = (size_t)rows * (size_t)cols;
    if ((size_t)dims[0] > SIZE_MAX / sizeof(float) / pixels) {
        gzclose(file);
        return fail(error, error_size, IDX_ERR_MEMORY, "%s: %u images do not fit in memory",
                    path, dims[0]);
    }
    size_t n = (size_t)dims[0] * pixels;
    unsigned char *bytes = NULL;
    status = read_payload(file, path, n, &bytes, error, error_size);
    gzclose(file);
    if (status != IDX_OK) return status;

    float *scaled = malloc(n * sizeof(float));
    if (!scaled) {
        free(bytes);
        return fail(error, error_size, IDX_ERR_MEMORY, "%s: out of memory", path);
    }
    for (size_t i = 0; i < n; ++i) scaled[i] = (float)bytes[i] / 255.0f;
    free(bytes);
    *images = scaled;
    *count = dims[0];
    return IDX_OK;
}

idx_status idx_read_labels(const char *path, int32_t classes, int32_t **labels, size_t *count,
                           char *error, size_t error_size) {
    gzFile file = NULL;
    uint32_t dims[1] = {0};
    idx_status status = open_idx(path, 1, &file, dims, error, error_size);
    if (status != IDX_OK) return status;
    if (dims[0] == 0) {
        gzclose(file);
        return fail(error, error_size, IDX_ERR_DIMENSIONS, "%s: holds no labels", path);
    }
    unsigned char *bytes = NULL;
    status = read_payload(file, path, dims[0], &bytes, error, error_size);
    gzclose(file);
    if (status != IDX_OK) return status;

    int32_t *values = malloc((size_t)dims[0] * sizeof(int32_t));
    if (!values) {
        free(bytes);
        return fail(error, error_size, IDX_ERR_MEMORY, "%s: out of memory", path);
    }
    for (size_t i = 0; i < dims[0]; ++i) {
        if (bytes[i] >= classes) {
            status = fail(error, error_size, IDX_ERR_LABEL,
                          "%s: label %d of sample %zu is outside [0, %d)", path, bytes[i], i,
                          (int)classes);
            free(values);
            free(bytes);
            return status;
        }
        values[i] = bytes[i];
    }
    free(bytes);
    *labels = values;
    *count = dims[0];
    return IDX_OK;
}

idx_status idx_load_dataset(const char *images_path, const char *labels_path, int64_t rows,
                            int64_t cols, int32_t classes, idx_dataset *out, char *error,
                            size_t error_size) {
    float *images = NULL;
    int32_t *labels = NULL;
    size_t image_count = 0, label_count = 0;
    idx_status status =
        idx_read_images(images_path, rows, cols, &images, &image_count, error, error_size);
    if (status != IDX_OK) return status;
    status = idx_read_labels(labels_path, classes, &labels, &label_count, error, error_size);
    if (status != IDX_OK) {
        free(images);
        return status;
    }
    if (image_count != label_count) {
        free(images);
        free(labels);
        return fail(error, error_size, IDX_ERR_COUNT_MISMATCH,
                    "%s holds %zu images but %s holds %zu labels", images_path, image_count,
                    labels_path, label_count);
    }
    out->images = images;
    out->labels = labels;
    out->count = image_count;
    out->rows = rows;
    out->cols = cols;
    return IDX_OK;
}

void idx_dataset_free(idx_dataset *dataset) {
    if (!dataset) return;
    free(dataset->images);
    free(dataset->labels);
    memset(dataset, 0, sizeof *dataset);
}
