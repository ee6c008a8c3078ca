// Syntax check of Julia files: fails on any ERROR or MISSING node that
// tree-sitter-julia reports.   node check_syntax.js FILE.jl...
'use strict';
const { juliaParser, parseFile, walk } = require('./julia_parser');

(async () => {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: node check_syntax.js FILE.jl...');
    process.exit(2);
  }
  const parser = await juliaParser();
  let bad = 0;
  for (const file of files) {
    const tree = parseFile(parser, file);
    for (const node of walk(tree.rootNode)) {
      if (node.type === 'ERROR' || node.isMissing) {
        const p = node.startPosition;
        console.log(`${file}:${p.row + 1}:${p.column + 1}: ${node.isMissing ? 'missing ' + node.type : 'syntax error'}`);
        bad++;
      }
    }
  }
  console.log(`julia syntax: ${files.length} files, ${bad} problems`);
  process.exit(bad ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(2); });
