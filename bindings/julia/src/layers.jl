# Layer descriptions, as in SimpleNNs.jl, turned into the textual spec of snn.
# Julia's column-major (w, h, c, batch) arrays are snn's [batch][c][h][w]
# memory, so spatial sizes are given width first, as Julia arrays index them.

abstract type Layer end

relu(x) = max(zero(x), x)
leaky_relu(x) = x > zero(x) ? x : oftype(x, 0.01) * x
sigmoid(x) = one(x) / (one(x) + exp(-x))
tanh_fast(x) = tanh(x)

function activation_name(f)
    f === identity && return "identity"
    f === relu && return "relu"
    f === leaky_relu && return "leaky_relu"
    (f === tanh || f === tanh_fast) && return "tanh"
    f === sigmoid && return "sigmoid"
    throw(ArgumentError("activation $f is not one of identity, relu, leaky_relu, tanh, tanh_fast, sigmoid"))
end

"""
    Static(n) / Static((w, h, c))

The input: a vector of `n` features, or images of `c` channels, `h` rows and `w` columns.
"""
struct Static <: Layer
    size::Tuple{Vararg{Int}}
end
Static(n::Integer) = Static((Int(n),))

struct Dense <: Layer
    outputs::Int
    activation_fn::Any
    use_bias::Bool
    init::Union{Nothing,Symbol}
end
"    Dense(n; activation_fn=identity, use_bias=true, init=nothing)"
Dense(n::Integer; activation_fn=identity, use_bias::Bool=true, init=nothing) =
    Dense(Int(n), activation_fn, use_bias, init)

struct Conv <: Layer
    kernel::Tuple{Int,Int}
    outputs::Int
    activation_fn::Any
    stride::Tuple{Int,Int}
    pad::Tuple{Int,Int}
    use_bias::Bool
    init::Union{Nothing,Symbol}
end
pair(x::Integer) = (Int(x), Int(x))
pair(x::Tuple) = (Int(x[1]), Int(x[2]))
"    Conv((kw, kh), out_channels; activation_fn=identity, stride=1, pad=0, use_bias=true, init=nothing)"
Conv(kernel, outputs::Integer; activation_fn=identity, stride=1, pad=0, use_bias::Bool=true, init=nothing) =
    Conv(pair(kernel), Int(outputs), activation_fn, pair(stride), pair(pad), use_bias, init)

struct MaxPool <: Layer
    size::Tuple{Int,Int}
    stride::Union{Nothing,Tuple{Int,Int}}
end
"    MaxPool((pw, ph); stride=nothing)"
MaxPool(size; stride=nothing) = MaxPool(pair(size), stride === nothing ? nothing : pair(stride))

struct AvgPool <: Layer
    size::Tuple{Int,Int}
    stride::Union{Nothing,Tuple{Int,Int}}
end
AvgPool(size; stride=nothing) = AvgPool(pair(size), stride === nothing ? nothing : pair(stride))

struct Flatten <: Layer end

# (w, h) in Julia's order becomes snn's HxW.
hw(t::Tuple{Int,Int}) = "$(t[2])x$(t[1])"
options(init, use_bias) = (use_bias ? "" : " nobias") * (init === nothing ? "" : " init=$init")

spec(l::Static) = length(l.size) == 1 ? "input $(l.size[1])" :
    length(l.size) == 3 ? "input $(l.size[2])x$(l.size[1])x$(l.size[3])" :
    throw(ArgumentError("Static takes n or (w, h, c), got $(l.size)"))
spec(l::Dense) = "dense $(l.outputs) $(activation_name(l.activation_fn))" * options(l.init, l.use_bias)
spec(l::Conv) = "conv $(hw(l.kernel)) $(l.outputs) $(activation_name(l.activation_fn)) " *
                "stride=$(hw(l.stride)) pad=$(hw(l.pad))" * options(l.init, l.use_bias)
pool_spec(name, l) = "$name $(hw(l.size))" * (l.stride === nothing ? "" : " stride=$(hw(l.stride))")
spec(l::MaxPool) = pool_spec("maxpool", l)
spec(l::AvgPool) = pool_spec("avgpool", l)
spec(::Flatten) = "flatten"

"""
    spec(layers...)

The textual snn spec of a chain of layers, e.g. "input 1; dense 10 tanh; dense 1 identity".
"""
spec(first::Layer, rest::Layer...) = join(map(spec, (first, rest...)), "; ")
