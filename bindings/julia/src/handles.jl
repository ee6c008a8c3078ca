# Owned handles. Each frees its native object in a finalizer and in `close`,
# whichever comes first. The library lets handles be destroyed in any order,
# and each Julia object that needs another to stay valid holds it in a field:
# a cache or an optimiser holds its model, a view (views.jl) its owner, a loss
# its data set. So a finalizer never frees memory a live object still points
# to, whatever order the garbage collector picks. A call given a closed
# handle throws an ArgumentError and never passes a dangling pointer.
#
# `moves` counts the times the handle's memory moved to another device (see
# `move!`): a view made before a move refuses to be used after it.

function destroy!(x, f)
    if x.ptr != C_NULL
        f(x.ptr)
        x.ptr = C_NULL
    end
    nothing
end

function live(x)
    x.ptr == C_NULL && throw(ArgumentError("this SNN.$(nameof(typeof(x))) has been closed"))
    x.ptr
end

function new_handle(f)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(f(out))
    out[]
end

"""
    Model(chain::Chain) / Model(spec::AbstractString)

A network: its layers, its flat parameter vector and its state, on one
device for its whole life (`gpu(model)` makes a new model on the GPU). Freed
by `close` or its finalizer.
"""
mutable struct Model
    ptr::Ptr{Cvoid}
    moves::Int
    function Model(ptr::Ptr{Cvoid})
        m = new(ptr, 0)
        finalizer(close, m)
    end
end
Base.close(m::Model) = destroy!(m, snn_model_destroy)
Base.unsafe_convert(::Type{Ptr{Cvoid}}, m::Model) = live(m)

# The shape of one sample: (n,), (features, steps) or (w, h, c). A field of
# this small Union (rather than Tuple{Vararg{Int}}) lets every call on it be
# compiled for the three concrete tuples, so the hot paths box nothing.
const SampleShape = Union{NTuple{1,Int},NTuple{2,Int},NTuple{3,Int}}

"""
The buffers of forward passes of one model, for batches up to a maximum
(`preallocate`). Holds its model, and the staging buffers of inputs, token
ids and lengths that cannot be passed by pointer (see `by_pointer`).
"""
mutable struct ForwardCache
    ptr::Ptr{Cvoid}
    model::Model
    moves::Int
    device::Int32
    input_shape::SampleShape
    output_shape::SampleShape
    tokens::Bool
    device_inputs::Any
    staging::Vector{Float32}
    int_staging::Vector{Int32}
    indices::Vector{Int64}
    function ForwardCache(ptr::Ptr{Cvoid}, model::Model, device::Int32, input_shape, output_shape, tokens::Bool)
        c = new(ptr, model, 0, device, input_shape, output_shape, tokens, nothing, Float32[], Int32[], Int64[])
        finalizer(close, c)
    end
end
Base.close(c::ForwardCache) = (destroy!(c, snn_forward_cache_destroy); c.device_inputs = nothing; nothing)
Base.unsafe_convert(::Type{Ptr{Cvoid}}, c::ForwardCache) = live(c)

"""
The gradient buffers of one model for batches up to a maximum
(`preallocate_grads`). Holds its model, the staging buffer of output
gradients and gradients that cannot be passed by pointer, and those of the
labels and indices a gathering loss converts on every step (0-based Int32
labels, 0-based Int64 indices), grown on first use.
"""
mutable struct BackwardCache
    ptr::Ptr{Cvoid}
    model::Model
    moves::Int
    device::Int32
    input_shape::SampleShape
    parameters::Int
    staging::Vector{Float32}
    int_staging::Vector{Int32}
    indices::Vector{Int64}
    function BackwardCache(ptr::Ptr{Cvoid}, model::Model, device::Int32, input_shape, parameters::Int)
        c = new(ptr, model, 0, device, input_shape, parameters, Float32[], Int32[], Int64[])
        finalizer(close, c)
    end
end
Base.close(c::BackwardCache) = destroy!(c, snn_backward_cache_destroy)
Base.unsafe_convert(::Type{Ptr{Cvoid}}, c::BackwardCache) = live(c)

"""
An optimiser's state (moments, step count) for one model. Holds its model
(`nothing` for one loaded with `load_checkpoint`, which returns both).
"""
mutable struct Optimiser
    ptr::Ptr{Cvoid}
    model::Union{Nothing,Model}
    function Optimiser(ptr::Ptr{Cvoid}, model)
        o = new(ptr, model)
        finalizer(close, o)
    end
end
Base.close(o::Optimiser) = destroy!(o, snn_optimiser_destroy)
Base.unsafe_convert(::Type{Ptr{Cvoid}}, o::Optimiser) = live(o)

"A data set copied once to a device, gathered from by index (`Dataset(samples; labels, device)`)."
mutable struct Dataset
    ptr::Ptr{Cvoid}
    device::Int32
    features::Int
    count::Int
    function Dataset(ptr::Ptr{Cvoid}, device::Int32, features::Int, count::Int)
        d = new(ptr, device, features, count)
        finalizer(close, d)
    end
end
Base.close(d::Dataset) = destroy!(d, snn_dataset_destroy)
Base.unsafe_convert(::Type{Ptr{Cvoid}}, d::Dataset) = live(d)

"Whether a handle is still open (not yet `close`d)."
Base.isopen(x::Union{Model,ForwardCache,BackwardCache,Optimiser,Dataset}) = x.ptr != C_NULL

device_symbol(d::Integer) = d == SNN_DEVICE_CPU ? :cpu : Int(d)
device_index(d::Symbol) = d === :cpu ? SNN_DEVICE_CPU : throw(ArgumentError("a device is :cpu or a GPU index, got :$d"))
device_index(d::Integer) = d >= 0 ? Int32(d) : throw(ArgumentError("a GPU index is 0 or more, got $d"))

# After a call that made a cache or optimiser follow its model, the cache is
# where the model is; a change of device counts as a move (its views refuse).
function followed!(c::Union{ForwardCache,BackwardCache}, m::Model)
    d = raw_device(m)
    if d != c.device
        c.device = d
        c.moves += 1
    end
    c
end
