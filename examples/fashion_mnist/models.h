/* The networks of examples/fashion_mnist (--model), shared with the
 * benchmark and the zero-allocation test, which time and check them. */
#ifndef FASHION_MNIST_MODELS_H
#define FASHION_MNIST_MODELS_H

/* SimpleNNs.jl's MNIST network: 1906 parameters. */
#define FASHION_MNIST_SIMPLENNS_SPEC \
    "input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; flatten; dense 10"

/* A stronger CNN, the classic two-block design. */
#define FASHION_MNIST_DEFAULT_SPEC                                     \
    "input 28x28x1; conv 3x3 32 relu pad=1 init=he_uniform; maxpool 2; " \
    "conv 3x3 64 relu pad=1 init=he_uniform; maxpool 2; flatten; "       \
    "dense 128 relu init=he_uniform; dense 10"

/* A small residual network: three stages (16, 32 and 64 channels at 28x28,
 * 14x14 and 7x7), each a convolution and a residual block of two
 * convolutions with batchnorm, then dropout before the classifier. */
#define FASHION_MNIST_RESNET_SPEC                                                   \
    "input 28x28x1; "                                                               \
    "conv 3 16 pad=1 nobias init=he_normal; batchnorm; relu name=s1; "              \
    "conv 3 16 pad=1 nobias init=he_normal; batchnorm; relu; "                      \
    "conv 3 16 pad=1 nobias init=he_normal; batchnorm; add s1; relu; maxpool 2; "   \
    "conv 3 32 pad=1 nobias init=he_normal; batchnorm; relu name=s2; "              \
    "conv 3 32 pad=1 nobias init=he_normal; batchnorm; relu; "                      \
    "conv 3 32 pad=1 nobias init=he_normal; batchnorm; add s2; relu; maxpool 2; "   \
    "conv 3 64 pad=1 nobias init=he_normal; batchnorm; relu name=s3; "              \
    "conv 3 64 pad=1 nobias init=he_normal; batchnorm; relu; "                      \
    "conv 3 64 pad=1 nobias init=he_normal; batchnorm; add s3; relu; "              \
    "flatten; dropout 0.4; dense 10"

#endif
