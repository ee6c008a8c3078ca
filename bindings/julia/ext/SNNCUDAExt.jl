# CuArray support, loaded when CUDA.jl is: inputs go from GPU memory to a GPU
# cache without a round trip through the host (snn_set_inputs_device), and a
# GPU backward cache's gradient can be viewed as a CuArray
# (snn_gradients_device). Outputs come back through the host: the C API has
# no device pointer to a GPU cache's outputs (snn_outputs is for CPU caches,
# snn_get_outputs copies to host memory). CUDA.jl must use the same device
# as the model. Array types are taken as `Type{<:CuArray}`, so `CuArray`,
# `CuArray{Float32}` and `CuMatrix{Float32}` all select these methods.
module SNNCUDAExt

using SNN
using CUDA

device_pointer(x::CuArray{Float32}) = Ptr{Cfloat}(UInt(pointer(x)))

function gpu_cache(c)
    c.device == SNN.SNN_DEVICE_CPU &&
        throw(ArgumentError("a CuArray needs a cache of a GPU model: preallocate on gpu(model), not on a CPU model"))
    c
end

"""
    set_inputs!(cache, x::CuArray)

Copies `x` (laid out as for host arrays: a Vector is one sample, a Matrix
(features, batch), ...) from GPU memory into a GPU cache. The work queued on
CUDA.jl's stream is finished first; `x` is kept referenced by the cache until
its next `set_inputs!`, since snn's copy runs on the cache's own stream. Do
not write to `x` before the next `get_outputs` or `backprop!` on the cache.
A CuArray of another element type is converted into a new Float32 CuArray
on every call: convert it once where the loop repeats.
"""
function SNN.set_inputs!(c::SNN.ForwardCache, x::CuArray{Float32})
    gpu_cache(c)
    batch, _ = SNN.batch_of(c.input_shape, x)
    SNN.batch_size(c).batch == batch || SNN.truncate_batch!(c, batch)
    CUDA.synchronize()
    GC.@preserve x SNN.set_inputs_device!(c, device_pointer(x), length(x))
    c.device_inputs = x
    c
end
SNN.set_inputs!(c::SNN.ForwardCache, x::CuArray{<:Real}) = SNN.set_inputs!(c, CuArray{Float32}(x))

"""
    get_outputs(cache, CuArray)

The outputs of the last forward pass as a new CuArray, shaped as
`get_outputs(cache)`. It is copied from the cache's GPU memory to the host and
back (the C API gives no device pointer to a GPU cache's outputs).
"""
SNN.get_outputs(c::SNN.ForwardCache, ::Type{<:CuArray}) = CuArray{Float32}(SNN.get_outputs(c))

"""
    gradients(cache, CuArray)

A zero-copy CuArray over a GPU backward cache's flat gradient, after waiting
for the queued backprop (`synchronize`). What is written there is the
gradient the next `update!` uses (e.g. an NCCL all-reduce across GPUs). The
array keeps the cache alive; do not use it after `close(cache)`.
"""
function SNN.gradients(c::SNN.BackwardCache, ::Type{<:CuArray})
    gpu_cache(c)
    data, n = Ref{Ptr{Cfloat}}(C_NULL), Ref{Csize_t}(0)
    SNN.check(SNN.snn_gradients_device(c, data, n))
    SNN.synchronize(c)
    view = unsafe_wrap(CuArray, CuPtr{Float32}(UInt(data[])), Int(n[]); own=false)
    finalizer(_ -> keep_alive(c), view)
    view
end
keep_alive(_) = nothing

"""
    model(x::CuArray)

Runs a GPU model on inputs in GPU memory, in inference mode, and returns the
outputs as a CuArray.
"""
function (m::SNN.Model)(x::CuArray{<:Real})
    SNN.device(m) === :cpu && throw(ArgumentError("the model is on the CPU: run gpu(model) on a CuArray"))
    batch, one_sample = SNN.batch_of(SNN.input_shape(m), x)
    c = SNN.preallocate(m, batch)
    try
        SNN.testmode!(c)
        SNN.set_inputs!(c, x)
        SNN.forward!(c, m)
        out = SNN.get_outputs(c, CuArray)
        one_sample ? reshape(out, SNN.output_shape(m)) : out
    finally
        close(c)
    end
end

end
