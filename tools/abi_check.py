#!/usr/bin/env python3
"""Checks that include/snn.h, the built library and the language bindings agree.

  abi_check.py --header include/snn.h [--lib build/libsnn.so]
               [--rust bindings/rust/snn-sys/src/lib.rs]
               [--csharp bindings/csharp/src/NativeMethods.cs bindings/csharp/src/Snn.cs]
               [--constants-only]

--lib:    every SNN_API function of the header is exported by the library, every
          exported snn_* symbol is declared in the header, and nothing else is
          exported. The library is an ELF shared object (libsnn.so, read with
          `nm -D --defined-only`) or a PE DLL (snn.dll: its export table is
          read here, so no Windows tool is needed).
--rust:   the extern "C" declarations of the Rust sys module match the header
          prototypes: same names, same number of arguments, same types (const
          included: *const T for const T*, *mut T for T*).
--csharp: the [DllImport] declarations of the C# NativeMethods class match the
          header prototypes: names, argument counts and types.

Constants: every member of an enum of the header and every numeric #define
(statuses, losses, optimiser kinds, hyperparameters, log levels, the CPU
device id, the spec limits, the version numbers) must be defined by each
binding with the header's value.
  rust:   a `pub const SNN_NAME: T = value;` of the checked file.
  csharp: an enum member is a member of the binding's public enum of its
          group (snn_status: Status, snn_loss: Loss, snn_optimiser_kind:
          OptimiserKind, snn_hyperparameter: Hyperparameter, snn_precision:
          Precision, SNN_LOG_*: LogLevel) named as the header name without
          SNN_ and its group word (SNN_ERR_NULL_ARGUMENT: Status.NullArgument,
          SNN_PRECISION_BF16: Precision.Bf16), compared ignoring case
          and underscores; a #define is a `const int SNN_NAME = value;`.
A constant the binding defines under an SNN_ name (or as a member of one of
those enums) that the header lacks is an error too.

--constants-only checks the bindings' constants and not their functions.

A binding may leave functions or constants out only by listing them, with the
reason, in lines of the form `abi-omitted: snn_name reason` (or SNN_NAME) in a
checked file; any other header function or constant it lacks is an error, as
is any declaration the header lacks.
Exits 1 on the first run that finds a problem, after printing all of them.
"""

import argparse
import re
import struct
import subprocess
import sys

# Typedefs of the header that are plain integers.
INT_TYPEDEFS = {
    "snn_status": "i32",
    "snn_loss": "i32",
    "snn_optimiser_kind": "i32",
    "snn_hyperparameter": "i32",
    "snn_precision": "i32",
}
HANDLES = {"snn_model", "snn_forward_cache", "snn_backward_cache", "snn_optimiser", "snn_dataset"}
# Option structs the header passes by pointer (their first field is their
# size), and the names the C# binding gives their sequential layouts. Rust
# mirrors them under the header's names.
STRUCTS = {"snn_onnx_export_options", "snn_onnx_import_options"}
CS_STRUCTS = {"OnnxExportOptionsNative": "snn_onnx_export_options",
              "OnnxImportOptionsNative": "snn_onnx_import_options"}
C_SCALARS = {
    "int32_t": "i32",
    "int64_t": "i64",
    "uint64_t": "u64",
    "size_t": "usize",
    "double": "f64",
    "float": "f32",
    "void": "void",
    "char": "char",
}


class CType:
    """A C type reduced to what crosses the ABI: a base type, the number of
    pointer levels, and whether the innermost pointee is const."""

    def __init__(self, base, depth=0, const=False):
        self.base = base
        self.depth = depth
        self.const = const and depth > 0

    def key(self, const_sensitive):
        return (self.base, self.depth, self.const if const_sensitive else False)

    def __str__(self):
        text = ("const " if self.const else "") + self.base + "*" * self.depth
        return text


def parse_c_type(text):
    text = " ".join(text.replace("*", " * ").split())
    const = False
    depth = text.count("*")
    words = [w for w in text.split() if w != "*"]
    if words and words[0] == "const":
        const = True
        words = words[1:]
    words = [w for w in words if w != "const"]
    if len(words) != 1:
        raise ValueError("cannot read C type %r" % text)
    name = words[0]
    if name in INT_TYPEDEFS:
        base = INT_TYPEDEFS[name]
    elif name in HANDLES:
        base = "handle:" + name
    elif name == "snn_log_fn":
        base = "fn"
    elif name in STRUCTS:
        base = "struct:" + name
    elif name in C_SCALARS:
        base = C_SCALARS[name]
    else:
        raise ValueError("unknown C type %r" % name)
    return CType(base, depth, const)


def strip_c_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def parse_header(path):
    """Returns {name: (return CType, [argument CTypes])} in header order."""
    with open(path, encoding="utf-8") as f:
        text = strip_c_comments(f.read())
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    protos = {}
    for m in re.finditer(r"\bSNN_API\s+([^;(]*?)\b(snn_\w+)\s*\(([^)]*)\)\s*;", text):
        ret, name, params = m.group(1), m.group(2), m.group(3).strip()
        args = []
        if params and params != "void":
            for p in params.split(","):
                p = " ".join(p.replace("*", " * ").split())
                # drop the parameter name (the last identifier)
                p = re.sub(r"\s*\b\w+$", "", p)
                args.append(parse_c_type(p))
        protos[name] = (parse_c_type(ret), args)
    return protos


def parse_int(text):
    return int(text.replace(" ", "").strip("()"), 0)


def parse_header_constants(path):
    """Returns {name: (value, group)} in header order: the numeric #defines
    (group None) and the enum members (group: the int32_t typedef just before
    the enum, or SNN_<WORD>_* for an enum without one)."""
    with open(path, encoding="utf-8") as f:
        text = strip_c_comments(f.read())
    consts = {}
    for m in re.finditer(r"^\s*#\s*define\s+(SNN_\w+)\s+(\(\s*-?\s*\d+\s*\)|-?\d+)\s*$", text, flags=re.M):
        consts[m.group(1)] = (parse_int(m.group(2)), None)
    for m in re.finditer(r"(?:typedef\s+int32_t\s+(\w+)\s*;\s*)?\benum\s*\{([^}]*)\}", text):
        group, value = m.group(1), -1
        for item in split_top_level(m.group(2)):
            name, _, init = item.partition("=")
            name = name.strip()
            value = parse_int(init) if init.strip() else value + 1
            if group is None:
                group = "SNN_%s_*" % name.split("_")[1]
            consts[name] = (value, group)
    return consts


def member_name(header_name):
    """SNN_ERR_NULL_ARGUMENT -> NULL_ARGUMENT, SNN_OK -> OK."""
    words = header_name.split("_")[1:]
    return "_".join(words[1:] if len(words) > 1 else words)


def pascal(name):
    return "".join(w.capitalize() for w in name.split("_"))


def normalised(name):
    return name.replace("_", "").lower()


def omitted_constants(text):
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"abi-omitted:\s*(SNN_\w+)\s+(.*)", text)}


def split_top_level(text, sep=","):
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


def omitted(text):
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"abi-omitted:\s*(snn_\w+)\s+(.*)", text)}


# --- Rust -------------------------------------------------------------------

RUST_SCALARS = {
    "i32": "i32", "c_int": "i32", "i64": "i64", "u64": "u64", "usize": "usize",
    "f64": "f64", "c_double": "f64", "f32": "f32", "c_float": "f32",
    "c_void": "void", "c_char": "char", "u8": "char", "()": "void",
    "u32": "u32", "i16": "i16", "u16": "u16", "i8": "i8", "isize": "isize", "c_long": "long",
}


def rust_type(text, aliases):
    text = " ".join(text.split())
    for prefix in ("std::os::raw::", "core::ffi::", "std::ffi::", "core::os::raw::"):
        text = text.replace(prefix, "")
    depth, const = 0, False
    while text.startswith("*"):
        depth += 1
        qual, text = text[1:].split(None, 1)
        const = qual == "const"  # the innermost qualifier wins
    if text in aliases:
        inner = rust_type(aliases[text], aliases)
        return CType(inner.base, inner.depth + depth, inner.const if inner.depth else const)
    if re.fullmatch(r"Option\s*<\s*(unsafe\s+)?extern\s+\"C\"\s+fn\s*\(.*\)\s*(->.*)?>", text):
        return CType("fn", depth, const)
    if text in HANDLES:
        return CType("handle:" + text, depth, const)
    if text in STRUCTS:
        return CType("struct:" + text, depth, const)
    if text in RUST_SCALARS:
        return CType(RUST_SCALARS[text], depth, const)
    raise ValueError("unknown Rust type %r" % text)


def parse_rust(path):
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    text = strip_c_comments(raw)
    aliases = {m.group(1): m.group(2) for m in re.finditer(r"\btype\s+(\w+)\s*=\s*([^;]+);", text)}
    decls, problems = {}, []
    for block in re.finditer(r"extern\s+\"C\"\s*\{(.*?)\n\}", text, flags=re.S):
        body = re.sub(r"#\[[^\]]*\]", " ", block.group(1))
        for m in re.finditer(r"\bfn\s+(\w+)\s*\((.*?)\)\s*(->\s*([^;]+))?;", body, flags=re.S):
            name, params, ret = m.group(1), m.group(2), m.group(4) or "()"
            try:
                args = []
                for p in split_top_level(params):
                    _, ty = p.split(":", 1)
                    args.append(rust_type(ty, aliases))
                decls[name] = (rust_type(ret.strip(), aliases), args)
            except ValueError as e:
                decls[name] = None
                problems.append("rust: %s: %s" % (name, e))
    return decls, omitted(raw), problems


def rust_constants(text, header_consts):
    """{header name: (binding value, what the binding calls it)} and problems."""
    found, problems = {}, []
    text = strip_c_comments(text)
    for m in re.finditer(r"\bconst\s+(SNN_\w+)\s*:\s*[\w:]+\s*=\s*([^;]+);", text):
        name = m.group(1)
        try:
            found[name] = (parse_int(m.group(2)), name)
        except ValueError:
            problems.append("rust: %s = %s is not an integer literal" % (name, m.group(2).strip()))
    for name in found:
        if name not in header_consts:
            problems.append("rust: %s is not a constant of the header" % name)
    return found, problems


# --- C# ---------------------------------------------------------------------

CS_SCALARS = {
    "int": "i32", "Int32": "i32", "long": "i64", "Int64": "i64", "ulong": "u64", "UInt64": "u64",
    "UIntPtr": "usize", "double": "f64", "float": "f32", "void": "void", "byte": "u8",
}


def cs_type(text, handles, delegates):
    """A C# parameter type (with its out/ref modifier and marshalling
    attributes) as the C type it marshals to. IntPtr is any pointer."""
    text = re.sub(r"\[[^\]]+\]", " ", text)  # attributes, not the [] of an array
    words = text.split()
    by_ref = words and words[0] in ("out", "ref")
    if by_ref:
        words = words[1:]
    ty = " ".join(words)
    depth = 1 if by_ref else 0
    const = False
    if ty.endswith("[]"):
        ty, depth = ty[:-2], depth + 1
    while ty.endswith("*"):
        ty, depth = ty[:-1].strip(), depth + 1
    if ty == "IntPtr":
        return CType("any", depth + 1)
    if ty == "string":
        return CType("char", depth + 1, True)
    if ty in handles:
        return CType("handle", depth + 1)
    if ty in delegates:
        return CType("fn", depth)
    if ty in CS_STRUCTS:  # passed as `ref`: a pointer to the struct, which the callee does not change
        return CType("struct:" + CS_STRUCTS[ty], depth, True)
    if ty in CS_SCALARS:
        return CType(CS_SCALARS[ty], depth, const)
    raise ValueError("unknown C# type %r" % ty)


def parse_csharp(path):
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    text = strip_c_comments(raw)
    handles = set(re.findall(r"class\s+(\w+)\s*:\s*SafeHandle\w*", text))
    handles |= set(re.findall(r"class\s+(\w+)\s*:\s*SnnHandle\b", text))
    delegates = set(re.findall(r"\bdelegate\s+\w+\s+(\w+)\s*\(", text))
    decls, problems = {}, []
    pattern = r"\[DllImport\([^\]]*\)\]\s*(?:\[[^\]]*\]\s*)*((?:\w+\s+)*?)extern\s+(\w+)\s+(\w+)\s*\(([^)]*)\)\s*;"
    for m in re.finditer(pattern, text, flags=re.S):
        ret, name, params = m.group(2), m.group(3), m.group(4).strip()
        try:
            args = [cs_type(p.rsplit(None, 1)[0], handles, delegates) for p in split_top_level(params)]
            decls[name] = (cs_type(ret, handles, delegates), args)
        except ValueError as e:
            decls[name] = None
            problems.append("csharp: %s: %s" % (name, e))
    return decls, omitted(raw), problems


# The public enum of the C# binding that holds each enum group of the header.
CS_ENUMS = {
    "snn_status": "Status",
    "snn_loss": "Loss",
    "snn_optimiser_kind": "OptimiserKind",
    "snn_hyperparameter": "Hyperparameter",
    "snn_precision": "Precision",
    "SNN_LOG_*": "LogLevel",
}


def csharp_constants(text, header_consts):
    found, problems = {}, []
    text = strip_c_comments(text)
    enums = {}
    for m in re.finditer(r"\benum\s+(\w+)\s*(?::\s*\w+\s*)?\{([^}]*)\}", text):
        members = {}
        for item in split_top_level(m.group(2)):
            member, _, init = item.partition("=")
            try:
                members[member.strip()] = parse_int(init)
            except ValueError:
                problems.append("csharp: %s.%s needs an explicit integer value" % (m.group(1), member.strip()))
        enums[m.group(1)] = members
    for name, (_, group) in header_consts.items():
        if group is None:
            continue
        if group not in CS_ENUMS:
            problems.append("csharp: the header's enum %s has no C# enum (add it to CS_ENUMS in %s)"
                            % (group, __file__.rsplit("/", 1)[-1]))
            continue
        enum = CS_ENUMS[group]
        for member, value in enums.get(enum, {}).items():
            if normalised(member) == normalised(member_name(name)):
                found[name] = (value, "%s.%s" % (enum, member))
    for m in re.finditer(r"\bconst\s+int\s+(SNN_\w+)\s*=\s*([^;]+);", text):
        try:
            found[m.group(1)] = (parse_int(m.group(2)), m.group(1))
        except ValueError:
            problems.append("csharp: %s = %s is not an integer literal" % (m.group(1), m.group(2).strip()))
    mirrored = {n for n, (_, g) in header_consts.items() if g is None}
    for name in found:
        if name.startswith("SNN_") and name not in mirrored and found[name][1] == name:
            problems.append("csharp: %s is not a #define of the header" % name)
    known = {v[1] for v in found.values()}
    for group, enum in CS_ENUMS.items():
        for member, value in enums.get(enum, {}).items():
            if "%s.%s" % (enum, member) not in known:
                problems.append("csharp: %s.%s = %d is not a constant of the header" % (enum, member, value))
    return found, problems


def compare_constants(lang, header_consts, found, left_out):
    problems = []
    for name, (value, _) in header_consts.items():
        if name not in found:
            if name not in left_out:
                group = header_consts[name][1]
                where = " as %s.%s" % (CS_ENUMS[group], pascal(member_name(name))) \
                    if lang == "csharp" and group in CS_ENUMS else ""
                problems.append("%s: %s (%d) is not defined%s (nor listed as abi-omitted)"
                                % (lang, name, value, where))
            continue
        bvalue, where = found[name]
        if bvalue != value:
            shown = "%d" % bvalue if where == name else "%s = %d" % (where, bvalue)
            problems.append("%s: %s is %s, the header says %d" % (lang, name, shown, value))
    return problems


# --- comparison -------------------------------------------------------------

def same(binding, c, const_sensitive):
    if binding.base == "any":  # IntPtr: any pointer of that depth
        return c.depth == binding.depth
    if binding.base == "u8":  # byte[]: a char or void buffer
        return c.base in ("char", "void") and c.depth == binding.depth
    handle = c.base.startswith("handle:")
    # a binding's generic handle type (a C# SafeHandle) stands for any handle
    if handle and binding.base == "handle":
        return binding.depth == c.depth and (binding.const == c.const or not const_sensitive)
    # void* also carries opaque handles and callbacks where a binding has no better type
    if (handle or c.base == "fn") and binding.base == "void":
        return binding.depth == c.depth + (c.base == "fn")
    return binding.key(const_sensitive) == c.key(const_sensitive)


def compare(lang, header, decls, left_out, const_sensitive):
    problems = []
    for name in decls:
        if name not in header:
            problems.append("%s: %s is not in the header" % (lang, name))
    for name, (ret, args) in header.items():
        if name not in decls:
            if name not in left_out:
                problems.append("%s: %s is not wrapped (nor listed as abi-omitted)" % (lang, name))
            continue
        if decls[name] is None:  # its types were already reported
            continue
        bret, bargs = decls[name]
        if len(bargs) != len(args):
            problems.append("%s: %s takes %d arguments, the header says %d"
                            % (lang, name, len(bargs), len(args)))
            continue
        if not same(bret, ret, const_sensitive):
            problems.append("%s: %s returns %s, the header says %s" % (lang, name, bret, ret))
        for i, (b, c) in enumerate(zip(bargs, args)):
            if not same(b, c, const_sensitive):
                problems.append("%s: %s argument %d is %s, the header says %s"
                                % (lang, name, i + 1, b, c))
    return problems


def elf_exports(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    exported = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            exported.add(fields[2].split("@")[0])
    return exported


def pe_exports(data):
    """The names of a PE image's export table (PE32 or PE32+)."""
    pe = struct.unpack_from("<I", data, 0x3C)[0]
    if data[pe:pe + 4] != b"PE\0\0":
        raise ValueError("not a PE image (no PE signature)")
    sections, optional_size = struct.unpack_from("<H12xH", data, pe + 6)
    optional = pe + 24
    magic = struct.unpack_from("<H", data, optional)[0]
    directories = optional + {0x10B: 96, 0x20B: 112}[magic]
    export_rva, export_size = struct.unpack_from("<II", data, directories)
    if export_size == 0:
        return set()
    table = optional + optional_size
    spans = [struct.unpack_from("<8xIIII", data, table + 40 * i)[:4] for i in range(sections)]

    def offset(rva):
        for size, address, raw_size, raw in spans:
            if address <= rva < address + max(size, raw_size):
                return rva - address + raw
        raise ValueError("RVA 0x%x is in no section" % rva)

    count, names = struct.unpack_from("<24xI4xI", data, offset(export_rva))
    exported = set()
    for i in range(count):
        start = offset(struct.unpack_from("<I", data, offset(names) + 4 * i)[0])
        exported.add(data[start:data.index(b"\0", start)].decode("ascii"))
    return exported


def check_library(header, lib):
    with open(lib, "rb") as f:
        data = f.read()
    exported = pe_exports(data) if data[:2] == b"MZ" else elf_exports(lib)
    problems = []
    for name in header:
        if name not in exported:
            problems.append("library: %s is declared in the header but not exported" % name)
    for sym in sorted(exported):
        if sym.startswith("snn_"):
            if sym not in header:
                problems.append("library: %s is exported but not declared in the header" % sym)
        else:
            problems.append("library: %s is exported but is not an snn_ function" % sym)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--header", required=True)
    ap.add_argument("--lib")
    ap.add_argument("--rust")
    ap.add_argument("--csharp", nargs="+")
    ap.add_argument("--constants-only", action="store_true")
    a = ap.parse_args()

    header = parse_header(a.header)
    header_consts = parse_header_constants(a.header)
    if not header:
        print("abi_check: no SNN_API prototypes found in %s" % a.header)
        return 1
    problems, summary = [], ["header: %d functions, %d constants" % (len(header), len(header_consts))]
    if a.lib:
        found = check_library(header, a.lib)
        problems += found
        summary.append("library: %s" % ("ok" if not found else "%d problems" % len(found)))
    bindings = (("rust", [a.rust] if a.rust else [], parse_rust, rust_constants, True),
                ("csharp", a.csharp or [], parse_csharp, csharp_constants, False))
    for lang, paths, parse, constants, const_sensitive in bindings:
        if not paths:
            continue
        decls, left_out, found = {}, {}, []
        texts = []
        for path in paths:
            d, l, f = parse(path)
            decls.update(d)
            left_out.update(l)
            found += f
            with open(path, encoding="utf-8") as f:
                texts.append(f.read())
        if not a.constants_only:
            found += compare(lang, header, decls, left_out, const_sensitive)
        consts, f = constants("\n".join(texts), header_consts)
        consts_left_out = omitted_constants("\n".join(texts))
        found += f + compare_constants(lang, header_consts, consts, consts_left_out)
        problems += found
        summary.append("%s: %d declared, %d omitted, %d constants, %d omitted, %s" % (
            lang, len(decls), len(left_out), len(consts), len(consts_left_out),
            "ok" if not found else "%d problems" % len(found)))
    for p in problems:
        print(p)
    print("abi_check: " + "; ".join(summary))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
