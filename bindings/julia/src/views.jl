# Zero-copy views of memory the library owns: a CPU model's parameters, a CPU
# forward cache's outputs, a CPU backward cache's gradient.
#
# A view holds its owner (the model or the cache), so the owner's finalizer
# cannot free the memory while the view is reachable. Every access checks that
# the owner is still open and has not moved to another device since the view
# was made (`move!`, or a cache following its model); otherwise it throws an
# ArgumentError that says to take a new view. Such a move cannot happen to a
# model through `gpu(model)`, which returns a new model.

"""
    HostView{N}

An `AbstractArray{Float32,N}` over library memory (see `parameters`,
`get_outputs`, `gradients`): reads and writes go straight to the library's
buffer. `copy(view)` gives an ordinary `Array`.
"""
struct HostView{N,O} <: AbstractArray{Float32,N}
    owner::O
    moves::Int
    ptr::Ptr{Float32}
    dims::NTuple{N,Int}
end

HostView(owner, ptr::Ptr{Cfloat}, dims::NTuple{N,Int}) where {N} = HostView{N,typeof(owner)}(owner, owner.moves, ptr, dims)

@inline function checked_pointer(v::HostView)
    owner = v.owner
    owner.ptr == C_NULL &&
        throw(ArgumentError("this view's SNN.$(nameof(typeof(owner))) has been closed"))
    owner.moves == v.moves ||
        throw(ArgumentError("this view's SNN.$(nameof(typeof(owner))) has moved to another device since the " *
                            "view was made; take a new view (or copy with get_parameters / get_gradients)"))
    v.ptr
end

Base.size(v::HostView) = v.dims
Base.IndexStyle(::Type{<:HostView}) = IndexLinear()

Base.@propagate_inbounds function Base.getindex(v::HostView, i::Int)
    @boundscheck checkbounds(v, i)
    p = checked_pointer(v)
    owner = v.owner
    GC.@preserve owner unsafe_load(p, i)
end

Base.@propagate_inbounds function Base.setindex!(v::HostView, x, i::Int)
    @boundscheck checkbounds(v, i)
    p = checked_pointer(v)
    owner = v.owner
    GC.@preserve owner unsafe_store!(p, convert(Float32, x), i)
    v
end

# Passing a view to a ccall (BLAS, another library) checks it once; the
# caller keeps the view referenced for the duration of that call.
Base.unsafe_convert(::Type{Ptr{Float32}}, v::HostView) = checked_pointer(v)
Base.elsize(::Type{<:HostView}) = sizeof(Float32)
Base.strides(v::HostView) = Base.size_to_strides(1, v.dims...)
