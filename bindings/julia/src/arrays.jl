# Julia arrays handed to the library. Float32 host memory that holds its
# elements one after the other in Julia's order (an Array, a HostView, a view
# of whole columns of either) is passed by pointer, without a copy. Any other
# array (another element type, a non-contiguous view, a transpose) is
# converted: into a staging buffer of the cache it is given to, allocated on
# the first such call and reused by the later ones, so a training loop still
# allocates nothing once it runs; or, for the one-off copies of models and
# data sets, into a new Array.

"""
    by_pointer(x) -> Bool

Whether the library can read `x` by pointer: Float32 host memory laid out as
Julia iterates it (an `Array{Float32}`, a `HostView`, a `view` with ranges,
such as `x[:, 3:10]`, whose elements are adjacent).
"""
by_pointer(x::Union{Array{Float32},HostView}) = true
by_pointer(x::SubArray{Float32,N,P,<:Tuple{Vararg{Union{Int,AbstractRange{Int}}}}}) where {N,P} =
    by_pointer(parent(x)) && adjacent(x)
by_pointer(x) = false

# The same for Int32 arrays (token ids, lengths): an Array{Int32} or a view of
# whole columns of one.
int32_by_pointer(x::Array{Int32}) = true
int32_by_pointer(x::SubArray{Int32,N,P,<:Tuple{Vararg{Union{Int,AbstractRange{Int}}}}}) where {N,P} =
    int32_by_pointer(parent(x)) && adjacent(x)
int32_by_pointer(x) = false

# Strides 1, size[1], size[1] size[2], ...: each element follows the one before
# (the stride of a dimension of size 1 does not matter).
function adjacent(x)
    expected = 1
    for (stride, n) in zip(strides(x), size(x))
        n == 1 || stride == expected || return false
        expected *= n
    end
    true
end

# x itself when it passes by pointer, else a new Float32 copy (for one-off
# copies: parameters, state, data sets, targets).
host_floats(x::AbstractArray{<:Real}) = by_pointer(x) ? x : Array{Float32}(x)

# The handle's staging buffer, grown to at least n elements.
function staging!(h, n::Integer)
    length(h.staging) < n && (h.staging = Vector{Float32}(undef, n))
    h.staging
end

# x itself when it passes by pointer, else its values converted into the
# handle's staging buffer (whose first length(x) elements then hold them).
function floats!(h, x::AbstractArray{<:Real})
    by_pointer(x) && return x
    copyto!(staging!(h, length(x)), 1, x, 1, length(x))
end

# x itself when it passes by pointer, else its values converted into the
# handle's Int32 staging buffer (an InexactError for a value beyond Int32).
function int32s!(h, x::AbstractArray{<:Integer})
    int32_by_pointer(x) && return x
    copyto!(int_staging!(h, length(x)), 1, x, 1, length(x))
end

# The handle's Int32 staging buffer, grown to at least n elements.
function int_staging!(h, n::Integer)
    length(h.int_staging) < n && (h.int_staging = Vector{Int32}(undef, n))
    h.int_staging
end

# 1-based indices, each in 1:count, as 0-based Int64 in the handle's index
# buffer (grown on first use); a BoundsError names the first one outside.
function zero_based!(h, indices::AbstractVector{<:Integer}, count::Integer)
    length(h.indices) < length(indices) && (h.indices = Vector{Int64}(undef, length(indices)))
    for (k, i) in enumerate(indices)
        1 <= i <= count || throw(BoundsError(1:count, i))
        h.indices[k] = i - 1
    end
    h.indices
end

# Throws a BoundsError for the first of the 1-based indices outside 1:count;
# allocates nothing otherwise.
function check_indices(indices::AbstractVector{<:Integer}, count::Integer)
    for i in indices
        1 <= i <= count || throw(BoundsError(1:count, i))
    end
    nothing
end

"""
    zero_based_labels(labels, num_classes, caller) -> Vector{Int32}

1-based class labels as snn's 0-based Int32 labels. Throws an ArgumentError
naming the first label outside `1:num_classes` (`num_classes` may be
`nothing`: then only labels below 1 or above typemax(Int32) are refused here).
"""
function zero_based_labels(labels::AbstractVector{<:Integer}, num_classes, caller)
    top = num_classes === nothing ? Int(typemax(Int32)) : Int(num_classes)
    for (k, l) in pairs(labels)
        1 <= l <= top || throw(ArgumentError("$caller: labels[$k] is $l, but labels are 1-based class indices in " *
                                             (num_classes === nothing ? "1:number of classes" : "1:$top")))
    end
    Int32[l - 1 for l in labels]
end

"""
    zero_based_step_labels(labels, num_classes, caller) -> Vector{Int32}

One label per step of a sequence output, a (steps, batch) array of 1-based
class labels or `missing` (the step is ignored), as snn's 0-based Int32
labels with -1 for `missing`. Throws an ArgumentError naming the first label
outside `1:num_classes` (or below 1 when `num_classes` is `nothing`).
"""
function zero_based_step_labels(labels::AbstractArray{<:Union{Missing,Integer}}, num_classes, caller)
    top = num_classes === nothing ? Int(typemax(Int32)) : Int(num_classes)
    out = Vector{Int32}(undef, length(labels))
    for (k, i) in enumerate(CartesianIndices(labels))
        l = labels[i]
        if l === missing
            out[k] = -1
        elseif 1 <= l <= top
            out[k] = l - 1
        else
            throw(ArgumentError("$caller: labels[$(join(Tuple(i), ", "))] is $l, but step labels are 1-based class " *
                                "indices in " * (num_classes === nothing ? "1:number of classes" : "1:$top") *
                                ", or missing to ignore the step"))
        end
    end
    out
end
