// Checks the API surface of a Julia package against its tests and its
// neighbours, without running Julia:
//   - every exported name, and every name of the module's `const PUBLIC = (...)`
//     tuple, is defined in the sources;
//   - the test file uses each of them: a function is called or passed as an
//     argument, a type or constant is referred to. A use is `name` (exported
//     or imported with `using M: name`) or `M.name`; comments, strings, quoted
//     symbols (`:name`), another module's `X.name`, and names the test file
//     defines itself do not count;
//   - no exported name is one that a package in the clash list exports, so
//     `using Flux, M` never makes a name ambiguous;
//   - no argument is declared `::Type{A}` with A a parametric array type
//     (CuArray, Array, ...): that matches the UnionAll A alone, so
//     `f(CuArray{Float32})` would find no method; `::Type{<:A}` is meant.
//
//   node check_api.js --tests runtests.jl [--clashes names.txt] SOURCE.jl...
//
// The clash list has lines "Package: name name ...", '#' starts a comment.
// Exits 1 when a problem is found.
'use strict';
const fs = require('fs');
const { juliaParser, parseFile, walk } = require('./julia_parser');

function named(node) {
  const out = [];
  for (let i = 0; i < node.namedChildCount; i++) out.push(node.namedChild(i));
  return out;
}

function firstIdentifier(node) {
  for (const n of walk(node)) if (n.type === 'identifier') return n.text;
  return null;
}

// The name a function definition or short-form method defines, when it is a
// plain identifier (not Base.close or a callable object).
function definedFunction(callNode) {
  const callee = named(callNode)[0];
  return callee && callee.type === 'identifier' ? callee.text : null;
}

function firstCall(node) {
  for (const n of walk(node)) if (n.type === 'call_expression') return n;
  return null;
}

// Parametric array types, for which `::Type{A}` matches only the UnionAll A.
const PARAMETRIC = new Set(['Array', 'Vector', 'Matrix', 'AbstractArray', 'AbstractVector', 'AbstractMatrix',
  'DenseArray', 'SubArray', 'CuArray', 'CuVector', 'CuMatrix', 'ROCArray', 'MtlArray']);

// `x::Type{A}` or `::Type{A}` with A in PARAMETRIC, as a problem, or null.
function exactUnionAll(node, file) {
  if (node.type !== 'parametrized_type_expression') return null;
  if (!node.parent || !['typed_expression', 'unary_typed_expression'].includes(node.parent.type)) return null;
  const [head, curly] = named(node);
  if (!head || head.text !== 'Type' || !curly || curly.type !== 'curly_expression') return null;
  const args = named(curly);
  if (args.length !== 1 || args[0].type !== 'identifier' || !PARAMETRIC.has(args[0].text)) return null;
  const a = args[0].text;
  return `${file}:${node.startPosition.row + 1}: ::Type{${a}} matches only the type ${a} itself, ` +
    `not ${a}{Float32}: write ::Type{<:${a}}`;
}

// --- the sources -------------------------------------------------------------
function readSources(parser, files) {
  let moduleName = null;
  const exported = [], publicNames = [], signatures = [];
  const functions = new Set(), others = new Set();
  for (const file of files) {
    const root = parseFile(parser, file).rootNode;
    for (const node of walk(root)) {
      const exact = exactUnionAll(node, file);
      if (exact) signatures.push(exact);
      if (node.type === 'module_definition' && moduleName === null) {
        moduleName = firstIdentifier(node);
      } else if (node.type === 'export_statement') {
        named(node).forEach((n) => exported.push(n.text));
      } else if (node.type === 'const_statement') {
        const [assignment] = named(node);
        const [lhs, , rhs] = assignment ? named(assignment) : [];
        if (lhs && lhs.type === 'identifier' && lhs.text === 'PUBLIC' && rhs) {
          for (const n of walk(rhs)) if (n.type === 'quote_expression') publicNames.push(n.text.replace(/^:/, ''));
        }
      } else if (node.type === 'function_definition') {
        const call = firstCall(named(node)[0]);
        const name = call && definedFunction(call);
        if (name) functions.add(name);
      } else if (node.type === 'assignment') {
        const lhs = named(node)[0];
        if (lhs.type === 'call_expression' || lhs.type === 'where_expression') {
          const call = lhs.type === 'call_expression' ? lhs : firstCall(lhs);
          const name = call && definedFunction(call);
          if (name) functions.add(name);
        } else if (lhs.type === 'identifier' && node.parent && node.parent.type === 'const_statement') {
          others.add(lhs.text);
        }
      } else if (node.type === 'struct_definition' || node.type === 'abstract_definition') {
        const name = firstIdentifier(named(node)[0]);
        if (name) others.add(name);
      }
    }
  }
  return { moduleName, exported, publicNames, functions, others, signatures };
}

// --- the tests -----------------------------------------------------------------
function inside(node, types) {
  for (let p = node.parent; p; p = p.parent) if (types.includes(p.type)) return true;
  return false;
}

// How the identifier `node` is used: 'call' (callee or argument), 'ref' (any
// other reference) or null (not a use of the module's name).
function useOf(node, moduleName, bare) {
  if (inside(node, ['quote_expression', 'using_statement', 'import_statement', 'export_statement'])) return null;
  let ref = node;
  const parent = node.parent;
  if (parent && parent.type === 'field_expression') {
    const [value, field] = named(parent);
    if (field && field.id === node.id) {
      if (value.type !== 'identifier' || value.text !== moduleName) return null;
      ref = parent;
    } else {
      return null; // the value of X.y is X itself, not a use of a name of the module
    }
  } else if (!bare.has(node.text)) {
    return null;
  }
  const up = ref.parent;
  if (!up) return 'ref';
  if ((up.type === 'call_expression' || up.type === 'broadcast_call_expression') && named(up)[0].id === ref.id) return 'call';
  if (up.type === 'argument_list' || up.type === 'macro_argument_list') return 'call';
  if (up.type === 'named_argument' && named(up)[0].id !== ref.id) return 'call';
  return 'ref';
}

// Names the test file defines itself (functions, assignments' targets).
function definedInTests(root) {
  const names = new Set();
  for (const node of walk(root)) {
    if (node.type === 'function_definition') {
      const call = firstCall(named(node)[0]);
      const name = call && definedFunction(call);
      if (name) names.add(name);
    } else if (node.type === 'assignment') {
      const lhs = named(node)[0];
      if (lhs.type === 'identifier') names.add(lhs.text);
      else if (lhs.type === 'call_expression') {
        const name = definedFunction(lhs);
        if (name) names.add(name);
      }
    }
  }
  return names;
}

function readClashes(path) {
  const owners = new Map();
  for (const raw of fs.readFileSync(path, 'utf8').split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) continue;
    const m = line.match(/^([\w.]+):\s*(.*)$/);
    if (!m) throw new Error(`${path}: a line must read "Package: name name ...": ${raw}`);
    for (const name of m[2].split(/\s+/).filter(Boolean)) {
      if (!owners.has(name)) owners.set(name, []);
      owners.get(name).push(m[1]);
    }
  }
  return owners;
}

(async () => {
  const argv = process.argv.slice(2);
  let tests = null, clashes = null;
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--tests') tests = argv[++i];
    else if (argv[i] === '--clashes') clashes = argv[++i];
    else files.push(argv[i]);
  }
  if (!tests || files.length === 0) {
    console.error('usage: node check_api.js --tests runtests.jl [--clashes names.txt] SOURCE.jl...');
    process.exit(2);
  }
  const parser = await juliaParser();
  const src = readSources(parser, files);
  const problems = [...src.signatures];
  if (!src.moduleName) problems.push('no module definition in the sources');
  const defined = (name) => src.functions.has(name) || src.others.has(name);

  for (const name of src.exported) if (!defined(name)) problems.push(`${name} is exported but not defined in the sources`);
  for (const name of src.publicNames) if (!defined(name)) problems.push(`${name} is public but not defined in the sources`);

  const testRoot = parseFile(parser, tests).rootNode;
  const own = definedInTests(testRoot);
  const bare = new Set(src.exported);
  for (const node of walk(testRoot)) {
    if (node.type === 'using_statement' || node.type === 'import_statement') {
      for (const sel of walk(node)) {
        if (sel.type !== 'selected_import') continue;
        const [mod, ...names] = named(sel);
        if (mod.text === src.moduleName) names.forEach((n) => bare.add(n.text));
      }
    }
  }
  for (const name of own) bare.delete(name);
  const uses = new Map();
  for (const node of walk(testRoot)) {
    if (node.type !== 'identifier') continue;
    const use = useOf(node, src.moduleName, bare);
    if (!use) continue;
    const seen = uses.get(node.text);
    if (seen !== 'call') uses.set(node.text, use);
  }
  const check = (name, kind) => {
    const use = uses.get(name);
    if (!use) problems.push(`${name} is ${kind} but ${tests} never uses it`);
    else if (src.functions.has(name) && !src.others.has(name) && use !== 'call') {
      problems.push(`${name} is ${kind} but ${tests} never calls it nor passes it to a call`);
    }
  };
  src.exported.forEach((name) => check(name, 'exported'));
  src.publicNames.forEach((name) => check(name, 'public'));

  if (clashes) {
    const owners = readClashes(clashes);
    for (const name of src.exported) {
      if (owners.has(name)) problems.push(`${name} is exported but ${owners.get(name).join(' and ')} exports it too`);
    }
  }

  problems.forEach((p) => console.log(p));
  console.log(`julia api: ${src.exported.length} exported and ${src.publicNames.length} public names, ` +
              `${problems.length} problems`);
  process.exit(problems.length ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(2); });
