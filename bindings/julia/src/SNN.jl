"""
    SNN

Julia binding of snn, an embeddable engine for training and running small
neural networks on the CPU and on NVIDIA GPUs. Models are described with
Flux's and SimpleNNs.jl's layer names and run by the snn library:

```julia
using SNN
model = SNN.Model(SNN.Chain(SNN.Dense(1 => 10, tanh), SNN.Dense(10 => 10, SNN.sigmoid), SNN.Dense(10 => 1)))
fwd = preallocate(model, 512)
```

Names: SNN exports only names that Flux, NNlib, Optimisers, MLUtils and
FileIO do not export, so `using Flux, SNN` never makes a name ambiguous.
Layers, activations, `gpu`/`cpu`, `trainmode!`/`testmode!`, `update!`,
`save`/`load` are used qualified (`SNN.Dense`, `SNN.gpu`, ...) or imported by
name (`using SNN: Dense, Chain`) where Flux is not loaded. They are marked
`public` on Julia 1.11 and later.

The library is found when the package is loaded (`__init__`), not when it is
precompiled: `ENV["SNN_LIBRARY"]` (a file, or a directory holding it) when
set, else the library in the package's `deps/` folder, else `libsnn.so.0`
(`snn.dll` on Windows) from the loader's search path. `SNN.library_path()`
says which file was loaded.
"""
module SNN

using Libdl

export chain, Static, Model, ForwardCache, BackwardCache, Dataset, SNNError,
       preallocate, preallocate_grads, inference_cache, predict!, set_inputs!, set_tokens!, set_lengths!, token_dataset, forward!, get_outputs,
       backprop!, parameters, gradients,
       MSELoss, HuberLoss, SmoothL1Loss, BCEWithLogitsLoss,
       LogitCrossEntropyLoss, AdamOptimiser, AdamWOptimiser, SGDOptimiser, RMSPropOptimiser,
       LionOptimiser

# The rest of the API: used as SNN.name (Flux, NNlib or FileIO export the same
# names), declared public on Julia 1.11 and later.
const PUBLIC = (
    # layers and activations
    :Chain, :Dense, :Conv, :MaxPool, :MeanPool, :AvgPool, :GlobalMeanPool, :Flatten, :BatchNorm,
    :Dropout, :LayerNorm, :SkipConnection, :SamePad, :spec, :relu, :leakyrelu, :sigmoid, :tanh_fast,
    :Tokens, :Embedding, :PosEmbed, :SeqPool, :LSTM, :GRU, :MultiHeadAttention, :Conv1d,
    :gelu, :swish, :silu, :softmax, :activation_name,
    # models
    :describe, :input_size, :output_size, :input_shape, :output_shape, :input_sequence, :parameter_count,
    :layer_count,
    :layer_shape, :layer_parameters, :layer_weight, :layer_bias, :initialise!, :get_parameters, :set_parameters!,
    :state_count, :state, :set_state!, :layer_state, :save, :load, :to_bytes, :from_bytes,
    :export_onnx, :import_onnx, :from_flux, :to_flux,
    # devices
    :gpu, :cpu, :device, :move!, :to_best_device!, :gpu_count, :gpu_status, :set_allow_tf32,
    :set_inputs_device!, :synchronize,
    # forward and backward caches
    :batch_size, :truncate_batch!, :trainmode!, :testmode!, :istraining, :seed!, :rngstate, :rngstate!,
    :by_pointer, :get_gradients, :set_gradients!, :input_gradients!, :input_gradients,
    :set_loss_parameter!, :loss_parameter,
    # optimisers and checkpoints
    :Optimiser, :update!, :reset!, :step_count, :grad_norm, :set_hyperparameter!, :hyperparameter,
    :save_checkpoint, :load_checkpoint,
    # mixed precision and loss scaling
    :precision!, :cache_precision, :precision_support, :loss_scaling!, :loss_scaling, :load_loss_scaling!,
    # the library
    :version, :build_features, :has_feature, :set_num_threads, :get_num_threads, :set_check_finite,
    :set_log_callback, :take_log_callback_error, :check_version, :library_path,
)
@static if VERSION >= v"1.11"
    eval(Expr(:public, PUBLIC...))
end

# The library, as the ccalls of libsnn.jl name it: its SONAME on Linux
# (libsnn.so.0), its install name's file on macOS, snn.dll on Windows. This is
# a constant, so precompiled code holds no path. `__init__` opens the library
# from wherever it is found (`load_library`): the loaders match a library
# already loaded by this name (ELF's SONAME, a DLL's base name), so every
# ccall then binds to that file, whether or not its folder is on the
# loader's search path, without rebuilding the package. (The pattern of the
# JLL packages, whose `libfoo` constants are SONAMEs opened in `__init__`.)
const libsnn = Sys.iswindows() ? "snn.dll" : Sys.isapple() ? "libsnn.0.dylib" : "libsnn.so.0"

# Where the package looks before the loader's search path: deps/lib, deps/bin
# and deps/ of the package (a build step, or a user, may copy the library
# there).
deps_dir() = joinpath(something(pkgdir(SNN), dirname(@__DIR__)), "deps")
const LIBRARY_PATH = Ref{String}("")

# The files to try, in order: SNN_LIBRARY alone when it is set (a file, or a
# directory holding `libsnn`), else deps/ then the loader's search path.
function library_candidates()
    requested = get(ENV, "SNN_LIBRARY", "")
    isempty(requested) || return [isdir(requested) ? joinpath(requested, libsnn) : requested]
    deps = deps_dir()
    found = [joinpath(deps, dir, libsnn) for dir in ("lib", "bin", "") if isfile(joinpath(deps, dir, libsnn))]
    push!(found, libsnn)
end

function load_library()
    tried = String[]
    for candidate in library_candidates()
        handle = Libdl.dlopen(candidate, Libdl.RTLD_NOW | Libdl.RTLD_GLOBAL; throw_error=false)
        if handle === nothing
            push!(tried, candidate)
            continue
        end
        path = Libdl.dlpath(handle)
        # the ccalls ask for `libsnn`: it must now resolve to this very file
        bound = Libdl.dlopen(libsnn, Libdl.RTLD_NOW | Libdl.RTLD_GLOBAL; throw_error=false)
        bound !== nothing && Libdl.dlpath(bound) == path ||
            error("SNN: $path was loaded but is not named $libsnn (its SONAME, or a DLL's file name), " *
                  "so the package's calls would not reach it; point SNN_LIBRARY at snn's $libsnn")
        LIBRARY_PATH[] = path
        return path
    end
    error("SNN: libsnn not found (tried $(join(tried, ", "))). Build and install snn, or set " *
          "ENV[\"SNN_LIBRARY\"] to the library file or its directory before `using SNN`, or copy $libsnn " *
          "into $(joinpath(deps_dir(), "lib"))")
end

"""
    library_path() -> String

The file of the snn library the package loaded (see `SNN_LIBRARY` in the
package's docstring).
"""
library_path() = LIBRARY_PATH[]

include("libsnn.jl")
include("errors.jl")
include("activations.jl")
include("layers.jl")
include("handles.jl")
include("views.jl")
include("arrays.jl")
include("models.jl")
include("caches.jl")
include("training.jl")
include("precision.jl")

function __init__()
    load_library()
    check_version()
end

"""
    check_version()

Throws an `SNNError` unless the loaded library's major version is this package's.
"""
function check_version()
    loaded = snn_version_number()
    if loaded ÷ 1_000_000 != SNN_VERSION_MAJOR
        throw(SNNError(SNN_ERR_UNSUPPORTED, "libsnn $(version()) is loaded but SNN.jl needs major version $SNN_VERSION_MAJOR"))
    end
    nothing
end

"The loaded library's version as text, e.g. \"0.1.0\"."
version() = unsafe_string(snn_version_string())
"The features of the loaded library, e.g. [\"cpu\", \"openblas\"]."
build_features() = split(unsafe_string(snn_build_features()))
"Whether the loaded library was built with `name` (one word of `build_features()`)."
has_feature(name::AbstractString) = snn_has_feature(name) != 0

"Bounds the CPU threads the library uses (OpenBLAS included)."
set_num_threads(n::Integer) = check(snn_set_num_threads(Int32(n)))
"The library's current CPU thread bound."
get_num_threads() = Int(snn_get_num_threads())
"With `true`, backprop and optimiser steps throw an `SNNError` on NaN or Inf instead of poisoning the model."
set_check_finite(on::Bool) = check(snn_set_check_finite(Int32(on)))
"With `true`, GPU caches created afterwards may use TF32 tensor-core math."
set_allow_tf32(on::Bool) = check(snn_set_allow_tf32(Int32(on)))

"Number of usable GPUs (0 without plugin, driver or device)."
gpu_count() = Int(snn_gpu_count())
"0 when GPU `device` can be used, else the status saying why not."
gpu_status(device::Integer) = Int(snn_gpu_status(Int32(device)))

end
