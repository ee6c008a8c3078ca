/* A reader for the IDX files of MNIST and Fashion-MNIST, plain or
 * gzip-compressed (zlib reads both transparently).
 *
 * An IDX file is a 4-byte magic number (two zero bytes, a type byte, 0x08 for
 * unsigned bytes, and the number of dimensions), one big-endian uint32 per
 * dimension, then the data, row-major. Images have 3 dimensions
 * (count, rows, columns), labels 1 (count).
 *
 * Every function returns IDX_OK or the kind of failure, and writes a message
 * naming the file and the reason into `error` (capacity `error_size`). On
 * failure nothing is allocated and the output is left untouched.
 */
#ifndef FASHION_MNIST_IDX_H
#define FASHION_MNIST_IDX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    IDX_OK = 0,
    IDX_ERR_OPEN,           /* the file is missing or unreadable */
    IDX_ERR_MAGIC,          /* not an IDX file of unsigned bytes */
    IDX_ERR_DIMENSIONS,     /* wrong number of dimensions or wrong sizes */
    IDX_ERR_TRUNCATED,      /* fewer data bytes than the header announces */
    IDX_ERR_COUNT_MISMATCH, /* images and labels files disagree on the count */
    IDX_ERR_LABEL,          /* a label outside [0, classes) */
    IDX_ERR_MEMORY          /* out of memory */
} idx_status;

/* A labelled image set. images holds count * rows * cols floats, image after
 * image, each pixel scaled from 0..255 to [0, 1]; labels holds count class
 * indices. Both are malloc'd; free them with idx_dataset_free. */
typedef struct {
    float *images;
    int32_t *labels;
    size_t count;
    int64_t rows, cols;
} idx_dataset;

/* Reads an images file whose images are rows x cols.
 * *images receives count * rows * cols floats in [0, 1] (malloc'd). */
idx_status idx_read_images(const char *path, int64_t rows, int64_t cols, float **images,
                           size_t *count, char *error, size_t error_size);

/* Reads a labels file; every label must lie in [0, classes).
 * *labels receives count int32 labels (malloc'd). */
idx_status idx_read_labels(const char *path, int32_t classes, int32_t **labels, size_t *count,
                           char *error, size_t error_size);

/* Reads a pair of images and labels files that must hold the same count. */
idx_status idx_load_dataset(const char *images_path, const char *labels_path, int64_t rows,
                            int64_t cols, int32_t classes, idx_dataset *out, char *error,
                            size_t error_size);

/* Frees a data set's arrays; the struct is zeroed. NULL is ignored. */
void idx_dataset_free(idx_dataset *dataset);

#ifdef __cplusplus
}
#endif

#endif /* FASHION_MNIST_IDX_H */
