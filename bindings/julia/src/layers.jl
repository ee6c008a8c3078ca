# Layer descriptions with Flux's and SimpleNNs.jl's names, turned into snn's
# textual spec. Nothing here touches the library: `Model(chain)` parses the
# spec. Julia's column-major (w, h, c, batch) arrays are snn's [batch][c][h][w]
# memory, so spatial sizes are given width first, as Julia arrays index them,
# and become snn's HxW.

abstract type Layer end

"""
    Static(n) / Static(w, h, c) / Static((w, h, c))

The input (SimpleNNs' name): a vector of `n` features, or images of `c`
channels, `h` rows and `w` columns. Only needed when the first layer does not
state its input size (`Dense(3 => 8)` does).
"""
struct Static <: Layer
    size::Tuple{Vararg{Int}}
    function Static(size::Tuple{Vararg{Integer}})
        length(size) in (1, 3) || throw(ArgumentError("Static takes n or (w, h, c), got $size"))
        all(>(0), size) || throw(ArgumentError("Static sizes must be positive, got $size"))
        new(Int.(size))
    end
end
Static(n::Integer) = Static((n,))
Static(w::Integer, h::Integer, c::Integer) = Static((w, h, c))

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

"""
    Dense(in => out, σ=identity; bias=true, init=nothing)      (Flux)
    Dense(out; activation_fn=identity, use_bias=true, init=nothing)  (SimpleNNs)

A fully connected layer. `σ` is an activation function (see
`activation_name`), `init` a name or function such as `:he_normal` or
`Flux.kaiming_normal`. With `in =>`, the model checks that `in` features
arrive.
"""
struct Dense <: Layer
    in::Union{Nothing,Int}
    out::Int
    act::String
    bias::Bool
    init::Union{Nothing,String}
end
Dense(io::Pair{<:Integer,<:Integer}, σ=identity; bias::Bool=true, init=nothing) =
    Dense(Int(io.first), Int(io.second), activation_name(σ), bias, init_name(init))
Dense(out::Integer, σ=identity; activation_fn=σ, use_bias::Bool=true, bias::Bool=use_bias, init=nothing) =
    Dense(nothing, Int(out), activation_name(activation_fn), bias, init_name(init))

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
    Conv((kw, kh), out; activation_fn=identity, stride=1, pad=0, use_bias=true, init=nothing)  (SimpleNNs)

A 2-D convolution; `pad` may be `SamePad()`. Sizes are (width, height) as
Julia's (w, h, c, batch) arrays index them.
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
function Conv(kernel, ch::Pair{<:Integer,<:Integer}, σ=identity; stride=1, pad=0, bias::Bool=true, init=nothing)
    k = pair(kernel)
    Conv(k, Int(ch.first), Int(ch.second), activation_name(σ), pair(stride), padding(pad, k), bias, init_name(init))
end
function Conv(kernel, out::Integer, σ=identity; activation_fn=σ, stride=1, pad=0, use_bias::Bool=true,
              bias::Bool=use_bias, init=nothing)
    k = pair(kernel)
    Conv(k, nothing, Int(out), activation_name(activation_fn), pair(stride), padding(pad, k), bias, init_name(init))
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
    Chain(layers...; input=nothing)

Layers applied in turn. An element may be a layer, a nested `Chain`, an
activation function (`relu`, `softmax`, `Flux.flatten`, ...) applied as a layer
of its own, or a `SkipConnection`. The input size comes from a first
`Static(...)`, from `input=` (`n` or `(w, h, c)`), or from a first
`Dense(in => out)`. `Model(chain)` builds it.
"""
struct Chain <: Layer
    layers::Vector{Any}
    input::Union{Nothing,Static}
    Chain(layers...; input=nothing) =
        new(Any[layers...], input === nothing || input isa Static ? input : Static(input))
end

"""
    SkipConnection(layers, connection)

`connection(layers(x), x)` as in Flux: `+` adds the input to the output of
`layers` (a residual block, snn's `add`); `cat` (or `vcat`) joins them along
the channels of images or the features of vectors (snn's `concat`).
"""
struct SkipConnection <: Layer
    layers::Any
    op::String
end
function SkipConnection(layers, connection::Function)
    name = nameof(connection)
    op = name === :+ ? "add" : name in (:cat, :vcat) ? "concat" :
        throw(ArgumentError("SkipConnection joins with + (add) or cat (concat along channels), got $(repr(connection))"))
    SkipConnection(layers, op)
end

# --- the spec ----------------------------------------------------------------

# The lines of a spec, and what some layers declared about their input: after
# the model is built, `check_declared` compares each with the shape of the
# layer before it (line i - 1 is snn's layer i - 1).
mutable struct SpecBuilder
    lines::Vector{String}
    declared::Vector{Tuple{Int,Layer}}
    names::Int
end

hw(t::Tuple{Int,Int}) = "$(t[2])x$(t[1])"
options(init, bias) = (bias ? "" : " nobias") * (init === nothing ? "" : " init=$init")
number(x::Float64) = repr(x)

line(l::Static) = length(l.size) == 1 ? "input $(l.size[1])" : "input $(l.size[2])x$(l.size[1])x$(l.size[3])"
line(l::Dense) = "dense $(l.out) $(l.act)" * options(l.init, l.bias)
line(l::Conv) = "conv $(hw(l.kernel)) $(l.out) $(l.act) stride=$(hw(l.stride)) pad=$(hw(l.pad))" * options(l.init, l.bias)
line(l::MaxPool) = "maxpool $(hw(l.window)) stride=$(hw(l.stride))"
line(l::MeanPool) = "avgpool $(hw(l.window)) stride=$(hw(l.stride))"
line(::GlobalMeanPool) = "globalavgpool"
line(::Flatten) = "flatten"
line(l::BatchNorm) = "batchnorm eps=$(number(l.eps)) momentum=$(number(l.momentum))"
line(l::Dropout) = "dropout $(number(l.p))"
line(l::LayerNorm) = "layernorm eps=$(number(l.eps))"

function emit!(b::SpecBuilder, l::Layer)
    if l isa Dense || l isa Conv || l isa BatchNorm || l isa LayerNorm
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

function emit!(b::SpecBuilder, f::Function)
    name = function_name(f)
    if name === :flatten
        push!(b.lines, "flatten")
    elseif name === :softmax
        push!(b.lines, "softmax")
    elseif activation_name(f) != "identity"
        push!(b.lines, activation_name(f))
    end
    b
end

function emit!(b::SpecBuilder, s::SkipConnection)
    last = b.lines[end]
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
    b
end

emit!(::SpecBuilder, ::Static) = throw(ArgumentError("Static may only begin the outermost Chain"))
emit!(b::SpecBuilder, x) = throw(ArgumentError("a Chain element must be a layer, a Chain, a SkipConnection or " *
                                               "an activation function, got $(repr(x))"))

function builder(c::Chain)
    layers = c.layers
    input = c.input
    if input === nothing && !isempty(layers) && layers[1] isa Static
        input, layers = layers[1], layers[2:end]
    end
    if input === nothing && !isempty(layers) && layers[1] isa Dense && layers[1].in !== nothing
        input = Static(layers[1].in)
    end
    input === nothing && throw(ArgumentError("the Chain does not say its input size: begin it with Static(n) or " *
                                             "Static(w, h, c), pass input=, or begin with Dense(in => out)"))
    b = SpecBuilder([line(input)], Tuple{Int,Layer}[], 0)
    foreach(l -> emit!(b, l), layers)
    b
end

"""
    spec(chain) / spec(layers...)

The textual snn spec of a chain, e.g. `"input 1; dense 10 tanh; dense 1 identity"`.
"""
spec(c::Chain) = join(builder(c).lines, "; ")
spec(first, rest...) = spec(Chain(first, rest...))
