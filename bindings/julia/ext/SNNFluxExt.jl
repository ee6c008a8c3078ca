# Flux models to snn models and back, loaded when Flux is: `SNN.from_flux`
# and `SNN.to_flux` (declared in SNN, models.jl).
#
# Layouts. Flux's arrays are column-major; snn's parameters are PyTorch's
# row-major tensors, one flat vector. A Dense weight is (out, in) in Flux and
# `[out][in]` in snn, which is Julia's (in, out): `SNN.layer_weight` views it
# as (out, in), so it is assigned as it is. A 2-D kernel is (kw, kh, in, out)
# in both (snn's `[out][in][kh][kw]`), but Flux's `Conv` computes a true
# convolution (NNlib flips the kernel) where snn cross-correlates, as
# PyTorch and Flux's `CrossCor` do: a `Conv` kernel is reversed in both
# spatial dimensions on the way in and on the way out. BatchNorm's scale and
# shift are snn's weight and bias, its running mean and variance snn's state
# (num_batches_tracked, which Flux does not keep, stays 0). LayerNorm's
# `diag` (a `Flux.Scale`) holds its weight and bias.
module SNNFluxExt

using SNN
using Flux

# The snn layers that hold parameters, one per Flux layer that does.
const PARAMETRIC = ("dense", "conv", "batchnorm", "layernorm")

# --- Flux to snn ------------------------------------------------------------------

function SNN.from_flux(c::Flux.Chain; input=nothing)
    weighted = Any[]
    layers = Any[]
    foreach(l -> convert!(layers, weighted, l), c.layers)
    model = SNN.Model(SNN.Chain(layers...; input=input))
    try
        copy_weights!(model, weighted)
    catch
        close(model)
        rethrow()
    end
    model
end

unsupported(l) = throw(ArgumentError(
    "from_flux: $(typeof(l).name.name) has no snn counterpart; the layers are Dense, Conv, CrossCor, BatchNorm, " *
    "LayerNorm, MaxPool, MeanPool, GlobalMeanPool, Dropout, SkipConnection, Chain and activation functions"))

# Appends the snn elements of Flux layer `l` to `layers`, and the Flux layers
# whose weights the model takes to `weighted`, in the order of the spec.
convert!(layers, weighted, l) = unsupported(l)
convert!(layers, weighted, f::Function) = push!(layers, f)
convert!(layers, weighted, c::Flux.Chain) = foreach(l -> convert!(layers, weighted, l), c.layers)

function convert!(layers, weighted, l::Flux.Dense)
    outputs, inputs = size(l.weight)
    push!(weighted, l)
    push!(layers, SNN.Dense(inputs => outputs, l.σ; bias=l.bias !== false))
end

# Flux keeps 2N paddings (low and high side of each dimension) or N.
function symmetric_pad(pad)
    length(pad) == 2 && return (pad[1], pad[2])
    length(pad) == 4 && pad[1] == pad[2] && pad[3] == pad[4] && return (pad[1], pad[3])
    throw(ArgumentError("from_flux: snn pads both sides of a dimension alike, got pad=$pad " *
                        "(SamePad with an even kernel pads one side more)"))
end

function convert!(layers, weighted, l::Union{Flux.Conv,Flux.CrossCor})
    w = l.weight
    ndims(w) == 4 || throw(ArgumentError("from_flux: only 2-D convolutions, got a kernel of size $(size(w))"))
    all(==(1), l.dilation) || throw(ArgumentError("from_flux: snn's conv has no dilation, got $(l.dilation)"))
    l isa Flux.Conv && l.groups != 1 && throw(ArgumentError("from_flux: snn's conv has no groups, got $(l.groups)"))
    push!(weighted, l)
    push!(layers, SNN.Conv((size(w, 1), size(w, 2)), size(w, 3) => size(w, 4), l.σ;
                           stride=l.stride, pad=symmetric_pad(l.pad), bias=l.bias !== false))
end

function convert!(layers, weighted, l::Flux.BatchNorm)
    l.μ === nothing && throw(ArgumentError("from_flux: BatchNorm(track_stats=false) keeps no running statistics, " *
                                           "which snn's inference uses"))
    l.momentum === nothing && throw(ArgumentError("from_flux: BatchNorm(momentum=nothing) (a cumulative " *
                                                  "average) has no snn counterpart"))
    push!(weighted, l)
    push!(layers, SNN.BatchNorm(length(l.μ), l.λ; eps=l.ϵ, momentum=l.momentum))
end

function convert!(layers, weighted, l::Flux.LayerNorm)
    push!(weighted, l)
    push!(layers, SNN.LayerNorm(l.size...; eps=l.ϵ))
    l.λ === identity || push!(layers, l.λ)
    layers
end

function pool_window(l)
    all(iszero, l.pad) || throw(ArgumentError("from_flux: snn's pooling has no padding, got pad=$(l.pad)"))
    length(l.k) == 2 || throw(ArgumentError("from_flux: only 2-D pooling, got a window of $(l.k)"))
    l.k
end
convert!(layers, weighted, l::Flux.MaxPool) = push!(layers, SNN.MaxPool(pool_window(l); stride=l.stride))
convert!(layers, weighted, l::Flux.MeanPool) = push!(layers, SNN.MeanPool(pool_window(l); stride=l.stride))
convert!(layers, weighted, ::Flux.GlobalMeanPool) = push!(layers, SNN.GlobalMeanPool())
convert!(layers, weighted, l::Flux.Dropout) = push!(layers, SNN.Dropout(l.p; dims=l.dims))

function convert!(layers, weighted, l::Flux.SkipConnection)
    inner = Any[]
    convert!(inner, weighted, l.layers)
    push!(layers, SNN.SkipConnection(SNN.Chain(inner...), l.connection))
end

# `dest .= src` for arrays of one size, else a DimensionMismatch naming `what`.
function assign!(dest, src, what)
    size(dest) == size(src) ||
        throw(DimensionMismatch("from_flux: $what is $(size(src)) in Flux but $(size(dest)) in snn"))
    dest .= src
end

function copy_weights!(m::SNN.Model, weighted)
    layers = [i for i in 1:SNN.layer_count(m) - 1 if SNN.layer_words(m, i)[1] in PARAMETRIC]
    length(layers) == length(weighted) ||
        error("from_flux: $(length(weighted)) Flux layers with weights became $(length(layers)) snn layers")
    state = SNN.state(m)
    for (i, l) in zip(layers, weighted)
        load!(m, i, l, state)
    end
    SNN.set_state!(m, state)
    m
end

function load!(m, i, l::Flux.Dense, _)
    assign!(SNN.layer_weight(m, i), l.weight, "Dense's weight")        # (out, in) views of [out][in]
    l.bias === false || assign!(SNN.layer_bias(m, i), l.bias, "Dense's bias")
end

function load!(m, i, l::Union{Flux.Conv,Flux.CrossCor}, _)
    kernel = l isa Flux.Conv ? reverse(l.weight; dims=(1, 2)) : l.weight
    assign!(SNN.layer_weight(m, i), kernel, "the convolution's kernel")
    l.bias === false || assign!(SNN.layer_bias(m, i), l.bias, "the convolution's bias")
end

function load!(m, i, l::Flux.BatchNorm, state)
    c = length(l.μ)
    SNN.layer_weight(m, i) .= l.γ === nothing ? 1 : l.γ
    SNN.layer_bias(m, i) .= l.β === nothing ? 0 : l.β
    r = SNN.layer_state(m, i)                   # running_mean [C], running_var [C], num_batches_tracked
    view(state, r[1:c]) .= l.μ
    view(state, r[c+1:2c]) .= l.σ²
end

function load!(m, i, l::Flux.LayerNorm, _)
    w, b = SNN.layer_weight(m, i), SNN.layer_bias(m, i)
    if l.diag isa Flux.Scale
        length(w) == length(l.diag.scale) ||
            throw(DimensionMismatch("from_flux: LayerNorm$(l.size) has $(length(l.diag.scale)) weights, snn's " *
                                    "layernorm $(length(w))"))
        vec(w) .= vec(l.diag.scale)
        vec(b) .= l.diag.bias === false ? 0 : vec(l.diag.bias)
    else                                         # affine=false
        w .= 1
        b .= 0
    end
end

# --- snn to Flux ------------------------------------------------------------------

function SNN.to_flux(model::SNN.Model)
    m = SNN.cpu(model)                           # the model itself when on the CPU, else a copy
    try
        flux_chain(m)
    finally
        m === model || close(m)
    end
end

# A layer's line of the canonical spec: its words, its options (key=value)
# apart.
function parse_line(text)
    words = split(text)
    positional, options = String[], Dict{String,String}()
    for w in words[2:end]
        k = findfirst('=', w)
        k === nothing ? push!(positional, w) : (options[w[1:k-1]] = w[k+1:end])
    end
    (kind=String(words[1]), positional=positional, options=options)
end

# snn's "H" or "HxW" as Julia's (w, h).
function wh(text)
    v = parse.(Int, split(text, 'x'))
    length(v) == 1 ? (v[1], v[1]) : (v[2], v[1])
end

channel_softmax(x) = Flux.softmax(x; dims=3)
concat_channels(a, b) = cat(a, b; dims=3)

const ACTIVATION_NAMES = ("identity", "relu", "leaky_relu", "tanh", "sigmoid", "gelu", "silu")

function flux_activation(name)
    name == "identity" && return identity
    name == "relu" && return Flux.relu
    name == "leaky_relu" && return Flux.leakyrelu          # slope 0.01, snn's
    name == "tanh" && return tanh
    name == "sigmoid" && return Flux.sigmoid
    name == "silu" && return Flux.swish
    if name == "gelu"
        isdefined(Flux.NNlib, :gelu_erf) && return Flux.NNlib.gelu_erf
        throw(ArgumentError("to_flux: snn's gelu is the exact erf form, NNlib's gelu_erf, which this NNlib " *
                            "(before 0.9.28) lacks"))
    end
    throw(ArgumentError("to_flux: no Flux activation for snn's $name"))
end

# The activation of a dense or conv line (identity when it names none).
function layer_activation(line)
    k = findfirst(in(ACTIVATION_NAMES), line.positional)
    flux_activation(k === nothing ? "identity" : line.positional[k])
end

bias_of(m, i) = isempty(SNN.layer_parameters(m, i).bias) ? false : Array(SNN.layer_bias(m, i))

function flux_layer(m, i, line, state)
    kind = line.kind
    if kind == "dense"
        Flux.Dense(Array(SNN.layer_weight(m, i)), bias_of(m, i), layer_activation(line))
    elseif kind == "conv"
        kernel = reverse(Array(SNN.layer_weight(m, i)); dims=(1, 2))   # Flux's Conv flips it back
        sw, sh = wh(get(line.options, "stride", "1"))
        pw, ph = wh(get(line.options, "pad", "0"))
        Flux.Conv(kernel, bias_of(m, i), layer_activation(line); stride=(sw, sh), pad=(pw, pw, ph, ph))
    elseif kind == "batchnorm"
        w = SNN.layer_weight(m, i)
        c = length(w)
        bn = Flux.BatchNorm(c)
        bn.γ .= w
        bn.β .= SNN.layer_bias(m, i)
        r = SNN.layer_state(m, i)
        bn.μ .= state[r[1:c]]
        bn.σ² .= state[r[c+1:2c]]
        bn.ϵ = parse(Float32, get(line.options, "eps", "1e-5"))
        bn.momentum = parse(Float32, get(line.options, "momentum", "0.1"))
        bn
    elseif kind == "layernorm"
        w = SNN.layer_weight(m, i)
        ln = Flux.LayerNorm(size(w); eps=parse(Float32, get(line.options, "eps", "1e-5")))
        vec(ln.diag.scale) .= vec(w)
        vec(ln.diag.bias) .= vec(SNN.layer_bias(m, i))
        ln
    elseif kind == "maxpool" || kind == "avgpool"
        window = wh(line.positional[1])
        stride = haskey(line.options, "stride") ? wh(line.options["stride"]) : window
        kind == "maxpool" ? Flux.MaxPool(window; stride=stride) : Flux.MeanPool(window; stride=stride)
    elseif kind == "globalavgpool"
        Flux.GlobalMeanPool()
    elseif kind == "flatten"
        Flux.MLUtils.flatten
    elseif kind == "dropout"
        Flux.Dropout(parse(Float64, line.positional[1]))
    elseif kind == "softmax"
        length(SNN.sample_shape(m, i)) == 3 ? channel_softmax : Flux.softmax
    elseif kind in ACTIVATION_NAMES
        flux_activation(kind)
    else
        throw(ArgumentError("to_flux: snn's $kind layer has no Flux counterpart here (layer $i)"))
    end
end

# The spec's layers as nested Flux layers: a layer named ID opens a branch
# that the `add ID` or `concat ID` below it closes into a SkipConnection; a
# name no add or concat refers to closes nothing.
function flux_chain(m::SNN.Model)
    lines = split(SNN.describe(m), "; ")
    input = parse_line(lines[1])
    isempty(input.positional) || input.positional[1] in ("seq", "tokens") &&
        throw(ArgumentError("to_flux: models of sequences or token ids have no Flux counterpart here"))
    state = SNN.state(m)
    frames = [(id="", layers=Any[])]             # the chain, then one frame per open name
    for i in 1:length(lines) - 1
        line = parse_line(lines[i + 1])
        haskey(line.options, "from") &&
            throw(ArgumentError("to_flux: layer $i reads an earlier layer (from=$(line.options["from"])), " *
                                "which a Flux Chain cannot express"))
        if line.kind == "add" || line.kind == "concat"
            id = line.positional[1]
            k = findlast(f -> f.id == id, frames)
            k === nothing && throw(ArgumentError("to_flux: layer $i joins $id, which is not on the chain's path"))
            while length(frames) > k                  # names nothing joined: their layers go on
                append!(frames[end - 1].layers, pop!(frames).layers)
            end
            branch = pop!(frames).layers
            connection = line.kind == "add" ? (+) : length(SNN.sample_shape(m, i)) == 3 ? concat_channels : vcat
            push!(frames[end].layers, Flux.SkipConnection(Flux.Chain(branch...), connection))
        else
            # snn's dense takes images as they are, Flux's Dense their flattening
            line.kind == "dense" && length(SNN.sample_shape(m, i - 1)) == 3 &&
                push!(frames[end].layers, Flux.MLUtils.flatten)
            push!(frames[end].layers, flux_layer(m, i, line, state))
        end
        haskey(line.options, "name") && push!(frames, (id=line.options["name"], layers=Any[]))
    end
    while length(frames) > 1
        append!(frames[end - 1].layers, pop!(frames).layers)
    end
    Flux.Chain(frames[1].layers...)
end

end
