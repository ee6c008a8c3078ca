# Layer descriptions with Flux's and SimpleNNs.jl's names, turned into snn's
# textual spec. Nothing here touches the library: `Model(chain)` parses the
# spec. Julia's column-major (w, h, c, batch) arrays are snn's [batch][c][h][w]
# memory, so spatial sizes are given width first, as Julia arrays index them,
# and become snn's HxW; likewise a batch of sequences is (features, steps,
# batch), snn's [batch][T][F], and sequence sizes are given features first.

abstract type Layer end

"""
    Static(n) / Static(w, h, c) / Static((w, h, c)) / Static((features, steps))

The input (SimpleNNs' name): a vector of `n` features, images of `c`
channels, `h` rows and `w` columns, or sequences of `steps` steps of
`features` values (snn's `input seq TxF`; a batch is a (features, steps,
batch) array). Only needed when the first layer does not state its input
size (`Dense(3 => 8)` does). Token ids come in through `Tokens`.
"""
struct Static <: Layer
    size::Tuple{Vararg{Int}}
    function Static(size::Tuple{Vararg{Integer}})
        length(size) in (1, 2, 3) || throw(ArgumentError("Static takes n, (features, steps) or (w, h, c), got $size"))
        all(>(0), size) || throw(ArgumentError("Static sizes must be positive, got $size"))
        new(Int.(size))
    end
end
Static(n::Integer) = Static((n,))
Static(w::Integer, h::Integer, c::Integer) = Static((w, h, c))

"""
    Tokens(steps; vocab)

The input of a model of token ids (snn's `input tokens T vocab=V`): `steps`
ids per sample, each in `0:vocab-1`, given to `set_tokens!` as a (steps,
batch) integer matrix. Ids are snn's 0-based ids, passed by pointer, not
Flux.Embedding's 1-based indices. An `Embedding` turns them into vectors.
"""
struct Tokens <: Layer
    steps::Int
    vocab::Int
    function Tokens(steps::Integer; vocab::Integer)
        steps > 0 && vocab > 0 || throw(ArgumentError("Tokens needs steps > 0 and vocab > 0, got $steps and $vocab"))
        new(Int(steps), Int(vocab))
    end
end

init_name(::Nothing) = nothing
init_name(s::Symbol) = init_name(String(s))
init_name(f::Function) = init_name(nameof(f))
function init_name(s::AbstractString)
    s in ("glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "lecun_normal", "zeros") && return String(s)
    s == "kaiming_uniform" && return "he_uniform"
    s == "kaiming_normal" && return "he_normal"
    s in ("zeros32", "zeros64") && return "zeros"
    throw(ArgumentError("init $s is not one of glorot_uniform, glorot_normal, he_uniform (kaiming_uniform), " *
                        "he_normal (kaiming_normal), lecun_normal, zeros"))
end

# SimpleNNs passes use_bias as Val(true) or Val(false), Flux bias as a Bool.
bias_flag(b::Bool) = b
bias_flag(::Val{true}) = true
bias_flag(::Val{false}) = false
bias_flag(x) = throw(ArgumentError("use_bias / bias is true, false, Val(true) or Val(false), got $(repr(x))"))

"""
    Dense(in => out, σ=identity; bias=true, init=nothing)      (Flux)
    Dense(out; activation_fn=identity, use_bias=Val(true), init=nothing)  (SimpleNNs)

A fully connected layer. `σ` is an activation function (see
`activation_name`), `init` a name or function such as `:he_normal` or
`Flux.kaiming_normal`; `bias` and `use_bias` take a `Bool` or SimpleNNs'
`Val(true)`/`Val(false)`. With `in =>`, the model checks that `in` features
arrive.

Its weight is snn's `[out][in]` row-major matrix, which is Julia's
column-major `(in, out)`: `SNN.layer_weight(model, layer)` gives it as Flux
holds it, an `(out, in)` `PermutedDimsArray` of that memory.
"""
struct Dense <: Layer
    in::Union{Nothing,Int}
    out::Int
    act::String
    bias::Bool
    init::Union{Nothing,String}
end
Dense(io::Pair{<:Integer,<:Integer}, σ=identity; bias=true, init=nothing) =
    Dense(Int(io.first), Int(io.second), activation_name(σ), bias_flag(bias), init_name(init))
Dense(out::Integer, σ=identity; activation_fn=σ, use_bias=true, bias=use_bias, init=nothing) =
    Dense(nothing, Int(out), activation_name(activation_fn), bias_flag(bias), init_name(init))

"""
    SamePad()

Padding that keeps the spatial size at stride 1 (odd kernels), as Flux's
`SamePad`; Flux's own `SamePad()` is accepted too.
"""
struct SamePad end

pair(x::Integer) = (Int(x), Int(x))
pair(x::Tuple{Integer,Integer}) = (Int(x[1]), Int(x[2]))
pair(x) = throw(ArgumentError("expected an integer or a (w, h) pair, got $(repr(x))"))

function padding(pad, kernel::Tuple{Int,Int})
    if nameof(typeof(pad)) === :SamePad
        all(isodd, kernel) || throw(ArgumentError("SamePad needs an odd kernel, got $kernel"))
        return (kernel[1] ÷ 2, kernel[2] ÷ 2)
    end
    pair(pad)
end

"""
    Conv((kw, kh), in => out, σ=identity; stride=1, pad=0, bias=true, init=nothing)   (Flux)
    Conv((kw, kh), out; activation_fn=identity, stride=1, pad=0, use_bias=Val(true), init=nothing)  (SimpleNNs)

A 2-D cross-correlation, as PyTorch's and Flux's `CrossCor` (Flux's `Conv`
flips the kernel); `pad` may be `SamePad()`. Sizes are (width, height) as
Julia's (w, h, c, batch) arrays index them. Its weight, snn's
`[out][in][kh][kw]`, is Julia's `(kw, kh, in, out)`, the layout of Flux's
weights (`SNN.layer_weight`).
"""
struct Conv <: Layer
    kernel::Tuple{Int,Int}
    in::Union{Nothing,Int}
    out::Int
    act::String
    stride::Tuple{Int,Int}
    pad::Tuple{Int,Int}
    bias::Bool
    init::Union{Nothing,String}
end
function Conv(kernel, ch::Pair{<:Integer,<:Integer}, σ=identity; stride=1, pad=0, bias=true, init=nothing)
    k = pair(kernel)
    Conv(k, Int(ch.first), Int(ch.second), activation_name(σ), pair(stride), padding(pad, k), bias_flag(bias),
         init_name(init))
end
function Conv(kernel, out::Integer, σ=identity; activation_fn=σ, stride=1, pad=0, use_bias=true, bias=use_bias,
              init=nothing)
    k = pair(kernel)
    Conv(k, nothing, Int(out), activation_name(activation_fn), pair(stride), padding(pad, k), bias_flag(bias),
         init_name(init))
end

"    MaxPool((pw, ph); stride=(pw, ph))  — the maximum of each window."
struct MaxPool <: Layer
    window::Tuple{Int,Int}
    stride::Tuple{Int,Int}
end
MaxPool(window; stride=window, pad=0) = (pad == 0 || throw(ArgumentError("snn's pooling has no padding")); MaxPool(pair(window), pair(stride)))

"    MeanPool((pw, ph); stride=(pw, ph))  — the mean of each window (`AvgPool` is the same)."
struct MeanPool <: Layer
    window::Tuple{Int,Int}
    stride::Tuple{Int,Int}
end
MeanPool(window; stride=window, pad=0) = (pad == 0 || throw(ArgumentError("snn's pooling has no padding")); MeanPool(pair(window), pair(stride)))
const AvgPool = MeanPool

"    GlobalMeanPool()  — the mean of each channel: (w, h, c) -> (1, 1, c)."
struct GlobalMeanPool <: Layer end

"    Flatten()  — images to vectors of w*h*c features (`Flux.flatten` in a Chain does the same)."
struct Flatten <: Layer end

"""
    BatchNorm(channels=nothing, σ=identity; eps=1e-5, momentum=0.1)

Batch normalisation over the batch (and the pixels of images), with a weight,
a bias and running statistics (the model's state). `momentum` weighs the new
batch, as in Flux and PyTorch.
"""
struct BatchNorm <: Layer
    channels::Union{Nothing,Int}
    act::String
    eps::Float64
    momentum::Float64
end
BatchNorm(channels::Union{Nothing,Integer}=nothing, σ=identity; eps::Real=1e-5, momentum::Real=0.1) =
    BatchNorm(channels === nothing ? nothing : Int(channels), activation_name(σ), Float64(eps), Float64(momentum))

"""
    Dropout(p)

Zeroes each element with probability `p` and scales the rest by 1/(1-p) in
training mode (`trainmode!`); passes its input through in `testmode!`.
"""
struct Dropout <: Layer
    p::Float64
    function Dropout(p::Real; dims=:)
        dims === (:) || throw(ArgumentError("snn's dropout drops single elements (dims=:)"))
        0 <= p < 1 || throw(ArgumentError("Dropout probability must lie in [0, 1), got $p"))
        new(Float64(p))
    end
end

"""
    LayerNorm(size...; eps=1e-5)

Normalises each sample over its whole shape, with a weight and a bias of that
shape. `size`, when given, is checked against the shape arriving.
"""
struct LayerNorm <: Layer
    size::Tuple{Vararg{Int}}
    eps::Float64
    function LayerNorm(size::Integer...; eps::Real=1e-5, affine::Bool=true)
        affine || throw(ArgumentError("snn's layernorm always has a weight and a bias (affine=true)"))
        new(Int.(size), Float64(eps))
    end
end

"""
    Embedding(vocab => dims; pad=nothing)      (Flux)

Token ids to vectors of `dims` values (snn's `embedding D`, PyTorch's
`nn.Embedding`): id `i` selects column `i + 1` of the `(dims, vocab)` weight,
the layout of Flux's `Embedding` weight (`SNN.layer_weight`). `pad` is an id
(0-based, as the ids) whose vector starts at zero and gets no gradient
(`padding_idx`). `vocab` is checked against the model's `Tokens` input.
"""
struct Embedding <: Layer
    vocab::Int
    dims::Int
    pad::Union{Nothing,Int}
end
Embedding(io::Pair{<:Integer,<:Integer}; pad=nothing) =
    Embedding(Int(io.first), Int(io.second), pad === nothing ? nothing : Int(pad))

"    PosEmbed()  — adds a learned (features, steps) weight to a sequence, one vector per position (snn's `posembed`)."
struct PosEmbed <: Layer end

"""
    SeqPool(mode)

A sequence to one vector over each sample's valid steps (see `set_lengths!`):
`:last` takes the last valid step, `:mean` their mean, `:max` their maximum
(snn's `seqpool last|mean|max`).
"""
struct SeqPool <: Layer
    mode::Symbol
    function SeqPool(mode::Symbol)
        mode in (:last, :mean, :max) || throw(ArgumentError("SeqPool takes :last, :mean or :max, got :$mode"))
        new(mode)
    end
end

# The recurrent layers' common options (snn's lstm and gru statements).
function recurrent_line(kind, l)
    "$kind $(l.out)" * (l.bidirectional ? " bidirectional" : "") * (l.last ? " last" : "") * (l.bias ? "" : " nobias")
end

"""
    LSTM(in => out; bidirectional=false, last=false, bias=true)      (Flux)
    LSTM(out; bidirectional=false, last=false, use_bias=Val(true))   (SimpleNNs' style)

A long short-term memory layer over a sequence (snn's `lstm H`, PyTorch's
`nn.LSTM(batch_first=True)`): (in, steps, batch) -> (out, steps, batch), or
(2out, steps, batch) with `bidirectional` (forward then backward features).
With `last` it returns the output at each sample's last valid step, a vector.
It stops at each sample's length (`set_lengths!`): its outputs at padded
steps are 0.
"""
struct LSTM <: Layer
    in::Union{Nothing,Int}
    out::Int
    bidirectional::Bool
    last::Bool
    bias::Bool
end
LSTM(io::Pair{<:Integer,<:Integer}; bidirectional::Bool=false, last::Bool=false, bias=true) =
    LSTM(Int(io.first), Int(io.second), bidirectional, last, bias_flag(bias))
LSTM(out::Integer; bidirectional::Bool=false, last::Bool=false, use_bias=true, bias=use_bias) =
    LSTM(nothing, Int(out), bidirectional, last, bias_flag(bias))

"""
    GRU(in => out; bidirectional=false, last=false, bias=true)      (Flux)
    GRU(out; bidirectional=false, last=false, use_bias=Val(true))   (SimpleNNs' style)

A gated recurrent unit layer (snn's `gru H`, PyTorch's `nn.GRU`), with the
options and shapes of `LSTM`.
"""
struct GRU <: Layer
    in::Union{Nothing,Int}
    out::Int
    bidirectional::Bool
    last::Bool
    bias::Bool
end
GRU(io::Pair{<:Integer,<:Integer}; bidirectional::Bool=false, last::Bool=false, bias=true) =
    GRU(Int(io.first), Int(io.second), bidirectional, last, bias_flag(bias))
GRU(out::Integer; bidirectional::Bool=false, last::Bool=false, use_bias=true, bias=use_bias) =
    GRU(nothing, Int(out), bidirectional, last, bias_flag(bias))

"""
    MultiHeadAttention(dims; nheads=8, causal=false)      (Flux)

Self-attention over a sequence of `dims` features with `nheads` heads (snn's
`attention heads=H`, PyTorch's `nn.MultiHeadAttention` with query = key =
value): (dims, steps, batch) -> the same shape. Padded steps
(`set_lengths!`) are masked as keys; `causal` lets each step attend only to
itself and the steps before. `dims` is checked against the features arriving.
"""
struct MultiHeadAttention <: Layer
    dims::Union{Nothing,Int}
    nheads::Int
    causal::Bool
end
MultiHeadAttention(dims::Integer; nheads::Integer=8, causal::Bool=false) =
    MultiHeadAttention(Int(dims), Int(nheads), causal)

"""
    Conv1d(k, in => out, σ=identity; stride=1, pad=0, dilation=1, bias=true, init=nothing)
    Conv1d(k, out; activation_fn=identity, stride=1, pad=0, dilation=1, use_bias=Val(true), init=nothing)
    Conv((k,), in => out, σ=identity; ...)      (Flux's 1-D convolution)

A 1-D cross-correlation along the steps of a sequence (snn's `conv1d`,
PyTorch's `nn.Conv1d` over channels-last steps): (in, steps, batch) ->
(out, steps', batch), steps' = (steps + 2pad - dilation (k - 1) - 1) ÷ stride + 1.
Its weight, snn's `[out][in][k]`, is Julia's `(k, in, out)`, the layout of
Flux's 1-D `Conv` weight. A model whose convolutions change the number of
steps takes no lengths.
"""
struct Conv1d <: Layer
    kernel::Int
    in::Union{Nothing,Int}
    out::Int
    act::String
    stride::Int
    pad::Int
    dilation::Int
    bias::Bool
    init::Union{Nothing,String}
end
Conv1d(k::Integer, ch::Pair{<:Integer,<:Integer}, σ=identity; stride::Integer=1, pad::Integer=0,
       dilation::Integer=1, bias=true, init=nothing) =
    Conv1d(Int(k), Int(ch.first), Int(ch.second), activation_name(σ), Int(stride), Int(pad), Int(dilation),
           bias_flag(bias), init_name(init))
Conv1d(k::Integer, out::Integer, σ=identity; activation_fn=σ, stride::Integer=1, pad::Integer=0,
       dilation::Integer=1, use_bias=true, bias=use_bias, init=nothing) =
    Conv1d(Int(k), nothing, Int(out), activation_name(activation_fn), Int(stride), Int(pad), Int(dilation),
           bias_flag(bias), init_name(init))
# Flux writes a 1-D convolution as Conv with a 1-tuple kernel.
Conv(kernel::Tuple{Integer}, ch::Pair{<:Integer,<:Integer}, σ=identity; kw...) = Conv1d(kernel[1], ch, σ; kw...)
Conv(kernel::Tuple{Integer}, out::Integer, σ=identity; kw...) = Conv1d(kernel[1], out, σ; kw...)

"""
    Chain(layers...; input=nothing)

Layers applied in turn. An element may be a layer, a nested `Chain`, an
activation function (`relu`, `Flux.flatten`, ...) applied as a layer of its
own, a softmax, or a `SkipConnection`. A softmax is recognised by its name
(`NNlib.softmax`, `SNN.softmax`) or, for an anonymous function such as
`x -> softmax(x; dims=3)`, by what it computes on small arrays; `Model(chain)`
refuses one that does not normalise over the features of vectors or
sequences or the channels of images (`NNlib.softmax` on images normalises
widths). The input size comes from a first `Static(...)` or `Tokens(...)`,
from `input=` (`n`, `(features, steps)`, `(w, h, c)` or a `Tokens`), or from a
first `Dense(in => out)`. `Model(chain)` builds it.
"""
struct Chain <: Layer
    layers::Vector{Any}
    input::Union{Nothing,Static,Tokens}
    Chain(layers...; input=nothing) =
        new(Any[layers...], input === nothing || input isa Static || input isa Tokens ? input : Static(input))
end

"""
    SkipConnection(layers, connection)

`connection(layers(x), x)` as in Flux, where `connection` adds (`+`: a
residual block, snn's `add`) or concatenates (snn's `concat`, `layers(x)`
first). snn's concat joins the features of vectors, which is `vcat` on
(features, batch) matrices, and the channels of images, which is
`(a, b) -> cat(a, b; dims=3)` on (w, h, c, batch) arrays: `vcat` there would
join widths. So `connection` is run once on small arrays: here to tell an
addition from a concatenation (anything else is refused), and by
`Model(chain)` on arrays of the shapes that reach it, where a connection that
does not join the features of vectors or the channels of images throws a
`DimensionMismatch` saying along which dimension it joins.
"""
struct SkipConnection <: Layer
    layers::Any
    connection::Any
    op::String
end
function SkipConnection(layers, connection)
    a, b = probe((2, 2, 2, 2)), probe((2, 2, 2, 2), 1)
    op = outcome(connection, a, b) == a + b ? "add" : joined_along(connection, a, b) !== nothing ? "concat" :
        throw(ArgumentError("SkipConnection joins with + (snn's add) or a concatenation (snn's concat: vcat on " *
                            "vectors, (a, b) -> cat(a, b; dims=3) on images); $(repr(connection)) computes neither"))
    SkipConnection(layers, connection, op)
end

# --- what a Julia function of whole arrays computes ---------------------------
# A connection or a softmax acts on a dimension of its arrays, which may not be
# the one snn's op acts on; each is run on small arrays of distinct values.

# Distinct values of size `dims`, all above `offset`.
probe(dims, offset=0) = reshape(Float32[offset + i / prod(dims) for i in 1:prod(dims)], dims)
# f(args...), or nothing where it throws.
outcome(f, args...) = try
    f(args...)
catch
    nothing
end

# The dimension along which f(a, b) concatenates a and b, or nothing.
function joined_along(f, a, b)
    result = outcome(f, a, b)
    result === nothing && return nothing
    for d in 1:ndims(a) + 1
        result == outcome((x, y) -> cat(x, y; dims=d), a, b) && return d
    end
    nothing
end

# Whether f(x) is the softmax of x over dimension d.
function is_softmax_over(f, x, d)
    result = outcome(f, x)
    result isa AbstractArray && size(result) == size(x) && isapprox(result, softmax_over(x, d); rtol=1e-5)
end
# The dimension over which f(x) is a softmax, or nothing.
softmax_along(f, x) = findfirst(d -> is_softmax_over(f, x, d), 1:ndims(x))
is_softmax(f) = any(x -> softmax_along(f, x) !== nothing, (probe((3, 2)), probe((2, 2, 3, 2))))

# Julia's names of the dimensions of a batch of samples of `shape`.
dimension_names(shape) = length(shape) == 1 ? ("features", "batch") :
    length(shape) == 2 ? ("features", "steps", "batch") : ("width", "height", "channels", "batch")
describe_dimension(shape, d) = d === nothing ? "along none of their dimensions" :
    "along dimension $d ($(d <= length(shape) + 1 ? dimension_names(shape)[d] : "a new one"))"
# snn's concat and softmax act on the features of vectors and sequences, the channels of images.
snn_dimension(shape) = length(shape) == 3 ? 3 : 1

# --- the spec ----------------------------------------------------------------

# The lines of a spec and what must be checked once the model is built and
# the shapes are known (`check_built`; line i is snn's layer i - 1): the input
# size some layers declared (layer before, layer), concatenations (concat
# layer, layer ID, connection) and softmaxes (layer, function).
mutable struct SpecBuilder
    lines::Vector{String}
    declared::Vector{Tuple{Int,Layer}}
    joins::Vector{Tuple{Int,Int,Any}}
    softmaxes::Vector{Tuple{Int,Any}}
    names::Int
end

hw(t::Tuple{Int,Int}) = "$(t[2])x$(t[1])"
options(init, bias) = (bias ? "" : " nobias") * (init === nothing ? "" : " init=$init")
number(x::Float64) = repr(x)

line(l::Static) = length(l.size) == 1 ? "input $(l.size[1])" :
    length(l.size) == 2 ? "input seq $(l.size[2])x$(l.size[1])" : "input $(l.size[2])x$(l.size[1])x$(l.size[3])"
line(l::Tokens) = "input tokens $(l.steps) vocab=$(l.vocab)"
line(l::Dense) = "dense $(l.out) $(l.act)" * options(l.init, l.bias)
line(l::Conv) = "conv $(hw(l.kernel)) $(l.out) $(l.act) stride=$(hw(l.stride)) pad=$(hw(l.pad))" * options(l.init, l.bias)
line(l::MaxPool) = "maxpool $(hw(l.window)) stride=$(hw(l.stride))"
line(l::MeanPool) = "avgpool $(hw(l.window)) stride=$(hw(l.stride))"
line(::GlobalMeanPool) = "globalavgpool"
line(::Flatten) = "flatten"
line(l::BatchNorm) = "batchnorm eps=$(number(l.eps)) momentum=$(number(l.momentum))"
line(l::Dropout) = "dropout $(number(l.p))"
line(l::LayerNorm) = "layernorm eps=$(number(l.eps))"
line(l::Embedding) = "embedding $(l.dims)" * (l.pad === nothing ? "" : " pad=$(l.pad)")
line(::PosEmbed) = "posembed"
line(l::SeqPool) = "seqpool $(l.mode)"
line(l::LSTM) = recurrent_line("lstm", l)
line(l::GRU) = recurrent_line("gru", l)
line(l::MultiHeadAttention) = "attention heads=$(l.nheads)" * (l.causal ? " causal" : "")
line(l::Conv1d) = "conv1d $(l.kernel) $(l.out) $(l.act) stride=$(l.stride) pad=$(l.pad) dilation=$(l.dilation)" *
    options(l.init, l.bias)

function emit!(b::SpecBuilder, l::Layer)
    if l isa Union{Dense,Conv,BatchNorm,LayerNorm,Embedding,LSTM,GRU,MultiHeadAttention,Conv1d}
        push!(b.declared, (length(b.lines) - 1, l))
    end
    push!(b.lines, line(l))
    if l isa BatchNorm && l.act != "identity"
        push!(b.lines, l.act)
    end
    b
end

function emit!(b::SpecBuilder, c::Chain)
    c.input === nothing || throw(ArgumentError("only the outermost Chain takes input="))
    foreach(l -> emit!(b, l), c.layers)
    b
end

# An activation by its name; a softmax by its name (NNlib's, Flux's, SNN's) or,
# for an anonymous function such as x -> softmax(x; dims=3), by what it computes.
function emit!(b::SpecBuilder, f::Function)
    name = function_name(f)
    if name === :flatten
        push!(b.lines, "flatten")
    elseif name === :softmax || name === nothing && is_softmax(f)
        push!(b.lines, "softmax")
        push!(b.softmaxes, (length(b.lines) - 1, f))
    else
        act = activation_name(f)
        act == "identity" || push!(b.lines, act)
    end
    b
end

function emit!(b::SpecBuilder, s::SkipConnection)
    last = b.lines[end]
    id_layer = length(b.lines) - 1
    m = match(r" name=(\w+)", last)
    if m === nothing
        b.names += 1
        id = "skip$(b.names)"
        b.lines[end] = last * " name=$id"
    else
        id = m.captures[1]
    end
    emit!(b, s.layers)
    push!(b.lines, "$(s.op) $id")
    s.op == "concat" && push!(b.joins, (length(b.lines) - 1, id_layer, s.connection))
    b
end

emit!(::SpecBuilder, ::Union{Static,Tokens}) =
    throw(ArgumentError("Static and Tokens may only begin the outermost Chain"))
emit!(b::SpecBuilder, x) = throw(ArgumentError("a Chain element must be a layer, a Chain, a SkipConnection or " *
                                               "an activation function, got $(repr(x))"))

function builder(c::Chain)
    layers = c.layers
    input = c.input
    if input === nothing && !isempty(layers) && layers[1] isa Union{Static,Tokens}
        input, layers = layers[1], layers[2:end]
    end
    if input === nothing && !isempty(layers) && layers[1] isa Dense && layers[1].in !== nothing
        input = Static(layers[1].in)
    end
    input === nothing && throw(ArgumentError("the Chain does not say its input size: begin it with Static(n), " *
                                             "Static((features, steps)), Static(w, h, c) or Tokens(steps; vocab), " *
                                             "pass input=, or begin with Dense(in => out)"))
    b = SpecBuilder([line(input)], Tuple{Int,Layer}[], Tuple{Int,Int,Any}[], Tuple{Int,Any}[], 0)
    foreach(l -> emit!(b, l), layers)
    b
end

"""
    spec(chain) / spec(layers...)

The textual snn spec of a chain, e.g. `"input 1; dense 10 tanh; dense 1 identity"`.
"""
spec(c::Chain) = join(builder(c).lines, "; ")
spec(first, rest...) = spec(Chain(first, rest...))
