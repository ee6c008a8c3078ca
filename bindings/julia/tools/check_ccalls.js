// Compares every ccall / @ccall of Julia files with the prototypes of snn.h:
// function name, argument count, each argument type and the return type.
//
//   node check_ccalls.js --header include/snn.h [--complete] [--constants] FILE.jl...
//
// --complete: every header function must be called somewhere in the files.
// --constants: every enum member and numeric #define of the header (statuses,
// losses, optimiser kinds, hyperparameters, log levels, the CPU device id, the
// spec limits, the version numbers) must be a `const SNN_NAME = value` (value a
// decimal integer literal, or one in Int32(...)) of the files, with the header's
// value, unless a line `abi-omitted: SNN_NAME reason` of the files leaves it
// out; a `const SNN_*` the header lacks is an error too.
// Exits 1 when a call names an unknown function, disagrees with its prototype,
// (with --complete) a function is missing, or (with --constants) a constant is
// missing, has another value or is not the header's.
'use strict';
const fs = require('fs');
const { juliaParser, parseFile, walk } = require('./julia_parser');

// --- the header -------------------------------------------------------------
const INT_TYPEDEFS = { snn_status: 'i32', snn_loss: 'i32', snn_optimiser_kind: 'i32', snn_hyperparameter: 'i32', snn_precision: 'i32' };
const HANDLES = new Set(['snn_model', 'snn_forward_cache', 'snn_backward_cache', 'snn_optimiser', 'snn_dataset']);
// Option structs passed by pointer, and the Julia structs that mirror them.
const STRUCTS = { snn_onnx_export_options: 'SnnOnnxExportOptions', snn_onnx_import_options: 'SnnOnnxImportOptions' };
const JL_STRUCTS = Object.fromEntries(Object.entries(STRUCTS).map(([c, j]) => [j, c]));
const C_SCALARS = { int32_t: 'i32', int64_t: 'i64', uint64_t: 'u64', size_t: 'usize', double: 'f64', float: 'f32', void: 'void', char: 'char' };

function cType(text) {
  const t = text.replace(/\*/g, ' * ').trim().split(/\s+/);
  const depth = t.filter((w) => w === '*').length;
  const words = t.filter((w) => w !== '*' && w !== 'const');
  if (words.length !== 1) throw new Error(`cannot read C type '${text}'`);
  const name = words[0];
  let base;
  if (name in INT_TYPEDEFS) base = INT_TYPEDEFS[name];
  else if (HANDLES.has(name)) base = 'handle';
  else if (name === 'snn_log_fn') base = 'fn';
  else if (name in STRUCTS) base = 'struct:' + name;
  else if (name in C_SCALARS) base = C_SCALARS[name];
  else throw new Error(`unknown C type '${name}'`);
  return { base, depth };
}

function parseHeader(path) {
  let text = fs.readFileSync(path, 'utf8').replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ');
  text = text.split('\n').filter((l) => !l.trim().startsWith('#')).join('\n');
  const protos = new Map();
  for (const m of text.matchAll(/\bSNN_API\s+([^;(]*?)\b(snn_\w+)\s*\(([^)]*)\)\s*;/g)) {
    const params = m[3].trim();
    const args = params === '' || params === 'void' ? [] :
      params.split(',').map((p) => cType(p.replace(/\*/g, ' * ').trim().replace(/\s*\b\w+$/, '')));
    protos.set(m[2], { ret: cType(m[1]), args });
  }
  return protos;
}

// Enum members and numeric #defines: Map name -> value, in header order.
function parseHeaderConstants(path) {
  const text = fs.readFileSync(path, 'utf8').replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ');
  const consts = new Map();
  const int = (t) => parseInt(t.replace(/[\s()]/g, ''), 10);
  for (const m of text.matchAll(/^\s*#\s*define\s+(SNN_\w+)\s+(\(\s*-?\s*\d+\s*\)|-?\d+)\s*$/gm)) consts.set(m[1], int(m[2]));
  for (const m of text.matchAll(/\benum\s*\{([^}]*)\}/g)) {
    let value = -1;
    for (const item of m[1].split(',').map((i) => i.trim()).filter((i) => i)) {
      const [name, init] = item.split('=').map((i) => i.trim());
      value = init === undefined ? value + 1 : int(init);
      consts.set(name, value);
    }
  }
  return consts;
}

// --- Julia types ------------------------------------------------------------
const JL_SCALARS = {
  Cint: 'i32', Int32: 'i32', Int64: 'i64', Clonglong: 'i64', UInt64: 'u64', Culonglong: 'u64',
  Csize_t: 'usize', Cdouble: 'f64', Float64: 'f64', Cfloat: 'f32', Float32: 'f32', Cvoid: 'void',
  Nothing: 'void', UInt8: 'char', Cchar: 'char', Cuchar: 'char',
};

function jlType(text) {
  text = text.replace(/\s+/g, '');
  const m = text.match(/^(Ptr|Ref)\{(.*)\}$/);
  if (m) {
    const inner = jlType(m[2]);
    return { base: inner.base, depth: inner.depth + 1 };
  }
  if (text === 'Cstring') return { base: 'char', depth: 1 };
  if (text in JL_SCALARS) return { base: JL_SCALARS[text], depth: 0 };
  if (text in JL_STRUCTS) return { base: 'struct:' + JL_STRUCTS[text], depth: 0 };
  throw new Error(`unknown Julia type '${text}'`);
}

const show = (t) => t.base + '*'.repeat(t.depth);

// Ptr{Cvoid} stands for an opaque handle pointer, void* and a callback.
function same(j, c) {
  if (j.base === 'void' && j.depth > 0) {
    if (c.base === 'handle' || c.base === 'void') return j.depth === c.depth;
    if (c.base === 'fn') return j.depth === c.depth + 1;
  }
  return j.base === c.base && j.depth === c.depth;
}

// --- the calls --------------------------------------------------------------
function named(node) {
  const out = [];
  for (let i = 0; i < node.namedChildCount; i++) out.push(node.namedChild(i));
  return out;
}

function tupleItems(node) {
  if (node.type === 'tuple_expression' || node.type === 'parenthesized_expression') return named(node);
  return [node];
}

// ccall((:name, lib), Ret, (Args...), values...)
function readCcall(node) {
  const args = named(node.childForFieldName('arguments') || node.namedChild(1));
  if (args.length < 3) throw new Error('ccall needs (function, library), a return type and argument types');
  const target = tupleItems(args[0]);
  const sym = target[0].text.replace(/^:/, '').replace(/^"|"$/g, '');
  const types = args[2].type === 'tuple_expression' ? named(args[2]) : tupleItems(args[2]);
  return { name: sym, ret: args[1].text, types: types.map((t) => t.text), values: args.length - 3 };
}

// @ccall lib.name(a::T, ...)::Ret
function readMacroCcall(node) {
  const typed = named(named(node)[1])[0];
  const [call, ret] = named(typed);
  const callee = named(call)[0];
  const sym = callee.type === 'field_expression' ? named(callee).slice(-1)[0].text : callee.text;
  const params = named(named(call)[1]).map((p) => named(p)[1].text);
  return { name: sym, ret: ret.text, types: params, values: params.length };
}

(async () => {
  const argv = process.argv.slice(2);
  let header = null, complete = false, constants = false;
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--header') header = argv[++i];
    else if (argv[i] === '--complete') complete = true;
    else if (argv[i] === '--constants') constants = true;
    else files.push(argv[i]);
  }
  if (!header || files.length === 0) {
    console.error('usage: node check_ccalls.js --header snn.h [--complete] [--constants] FILE.jl...');
    process.exit(2);
  }
  const protos = parseHeader(header);
  const parser = await juliaParser();
  const problems = [];
  const seen = new Set();
  let calls = 0;
  const defined = new Map();
  const leftOut = new Set();
  for (const file of files) {
    for (const m of fs.readFileSync(file, 'utf8').matchAll(/abi-omitted:\s*(SNN_\w+)\s+\S/g)) leftOut.add(m[1]);
    for (const node of walk(parseFile(parser, file).rootNode)) {
      let call = null;
      const where = `${file}:${node.startPosition.row + 1}`;
      if (constants && node.type === 'const_statement') {
        const assignment = named(node)[0];
        const [lhs, , rhs] = assignment ? named(assignment) : [];
        if (lhs && lhs.type === 'identifier' && lhs.text.startsWith('SNN_')) {
          const m = rhs.text.replace(/\s+/g, '').match(/^(?:Int32\((-?\d[\d_]*)\)|(-?\d[\d_]*))$/);
          if (!m) problems.push(`${where}: ${lhs.text} = ${rhs.text} is not an integer literal`);
          else defined.set(lhs.text, { value: parseInt((m[1] || m[2]).replace(/_/g, ''), 10), where });
        }
        continue;
      }
      try {
        if (node.type === 'call_expression' && node.namedChild(0) && node.namedChild(0).text === 'ccall') call = readCcall(node);
        else if (node.type === 'macrocall_expression' && named(node)[0].text === '@ccall') call = readMacroCcall(node);
      } catch (e) {
        problems.push(`${where}: cannot read this ccall: ${e.message}`);
        continue;
      }
      if (!call) continue;
      calls++;
      const proto = protos.get(call.name);
      if (!proto) { problems.push(`${where}: ${call.name} is not a function of the header`); continue; }
      seen.add(call.name);
      if (call.types.length !== proto.args.length) {
        problems.push(`${where}: ${call.name} declares ${call.types.length} arguments, the header has ${proto.args.length}`);
        continue;
      }
      if (call.values !== call.types.length) {
        problems.push(`${where}: ${call.name} passes ${call.values} values for ${call.types.length} argument types`);
      }
      try {
        if (!same(jlType(call.ret), proto.ret)) problems.push(`${where}: ${call.name} returns ${call.ret}, the header says ${show(proto.ret)}`);
        call.types.forEach((t, i) => {
          if (!same(jlType(t), proto.args[i])) problems.push(`${where}: ${call.name} argument ${i + 1} is ${t}, the header says ${show(proto.args[i])}`);
        });
      } catch (e) {
        problems.push(`${where}: ${call.name}: ${e.message}`);
      }
    }
  }
  if (complete) {
    for (const name of protos.keys()) if (!seen.has(name)) problems.push(`${name} is never called (every header function must be wrapped)`);
  }
  let summary = '';
  if (constants) {
    const consts = parseHeaderConstants(header);
    for (const [name, value] of consts) {
      const d = defined.get(name);
      if (!d) {
        if (!leftOut.has(name)) problems.push(`${name} (${value}) is not defined (nor listed as abi-omitted)`);
      } else if (d.value !== value) {
        problems.push(`${d.where}: ${name} is ${d.value}, the header says ${value}`);
      }
    }
    for (const [name, d] of defined) if (!consts.has(name)) problems.push(`${d.where}: ${name} is not a constant of the header`);
    summary = `, ${defined.size} of ${consts.size} header constants (${leftOut.size} omitted)`;
  }
  problems.forEach((p) => console.log(p));
  console.log(`julia ccalls: ${calls} calls, ${seen.size} of ${protos.size} header functions${summary}, ${problems.length} problems`);
  process.exit(problems.length ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(2); });
