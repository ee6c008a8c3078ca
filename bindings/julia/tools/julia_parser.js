// Loads tree-sitter-julia (a prebuilt wasm grammar) into web-tree-sitter.
'use strict';
const fs = require('fs');
const { Parser, Language } = require('web-tree-sitter');

async function juliaParser() {
  await Parser.init();
  const language = await Language.load(require.resolve('tree-sitter-julia/tree-sitter-julia.wasm'));
  const parser = new Parser();
  parser.setLanguage(language);
  return parser;
}

function parseFile(parser, path) {
  return parser.parse(fs.readFileSync(path, 'utf8'));
}

function* walk(node) {
  yield node;
  for (let i = 0; i < node.childCount; i++) yield* walk(node.child(i));
}

module.exports = { juliaParser, parseFile, walk };
