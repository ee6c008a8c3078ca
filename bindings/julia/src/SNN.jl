"""
    SNN

Julia binding of snn, an embeddable engine for training and running small
neural networks on the CPU and on NVIDIA GPUs. Its API follows SimpleNNs.jl:

```julia
using SNN
model = chain(Static(1), Dense(10, activation_fn=tanh), Dense(10, activation_fn=sigmoid), Dense(1))
```

The library is `ENV["SNN_LIBRARY"]` (a path or a name) when set, else
`libsnn` from the loader's search path; the value is read when the package is
precompiled.
"""
module SNN

using Libdl

export chain, Static, Dense, Conv, MaxPool, AvgPool, Flatten, relu, leaky_relu, sigmoid, tanh_fast,
       Model, ForwardCache, BackwardCache, Optimiser, Dataset, SNNError,
       preallocate, preallocate_grads, set_inputs!, forward!, get_outputs, backprop!, parameters,
       gradients, set_gradients!, MSELoss, LogitCrossEntropyLoss, AdamOptimiser, AdamWOptimiser, SGDOptimiser,
       RMSPropOptimiser, update!, reset!, gpu, cpu, initialise!, save, load, truncate_batch!

const libsnn = get(ENV, "SNN_LIBRARY", "libsnn")
const PACKAGE_MAJOR = 0
const CPU_DEVICE = Int32(-1)

include("libsnn.jl")
include("errors.jl")
include("layers.jl")
include("handles.jl")
include("training.jl")

function __init__()
    if get(ENV, "SNN_LIBRARY", "libsnn") != libsnn
        @warn "SNN_LIBRARY changed since SNN was precompiled; still using $libsnn (re-precompile SNN to switch)"
    end
    check_version()
end

"""
    check_version()

Throws an `SNNError` unless the loaded library's major version is this package's.
"""
function check_version()
    loaded = snn_version_number()
    if loaded ÷ 1_000_000 != PACKAGE_MAJOR
        throw(SNNError(Int32(15), "libsnn $(version()) is loaded but SNN.jl needs major version $PACKAGE_MAJOR"))
    end
    nothing
end

"The loaded library's version as text, e.g. \"0.1.0\"."
version() = unsafe_string(snn_version_string())
"The features of the loaded library, e.g. [\"cpu\", \"openblas\"]."
build_features() = split(unsafe_string(snn_build_features()))
has_feature(name::AbstractString) = snn_has_feature(name) != 0

"Bounds the CPU threads the library uses (OpenBLAS included)."
set_num_threads(n::Integer) = check(snn_set_num_threads(Int32(n)))
get_num_threads() = Int(snn_get_num_threads())
set_check_finite(on::Bool) = check(snn_set_check_finite(Int32(on)))
set_allow_tf32(on::Bool) = check(snn_set_allow_tf32(Int32(on)))

"Number of usable GPUs (0 without plugin, driver or device)."
gpu_count() = Int(snn_gpu_count())
"0 when GPU `device` can be used, else the status saying why not."
gpu_status(device::Integer) = Int(snn_gpu_status(Int32(device)))

end
