// Runs the cases tests/onnx/test_export.cpp wrote (SNN_ONNX_CASES_DIR) with
// ONNX Runtime's CPU provider and compares each output with snn's:
// |ort - snn| <= atol + rtol |snn| for every value (NaN only against NaN).
//   node run_cases.js CASES_DIR [--atol=1e-4] [--rtol=1e-4]
// (a run of cases.json may give a looser "tolerance" of its own, for both)
// Prints one line per run with its largest difference and exits 1 on any
// mismatch, or when a case cannot be loaded or run.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function option(name, fallback) {
    const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
    return arg ? Number(arg.slice(name.length + 3)) : fallback;
}

function readTyped(file, Type) {
    const b = fs.readFileSync(file);
    if (b.length % Type.BYTES_PER_ELEMENT !== 0) throw new Error(`${file}: ${b.length} bytes`);
    // Copy into an aligned buffer of its own.
    const copy = new Uint8Array(b.length);
    copy.set(b);
    return new Type(copy.buffer);
}

async function main() {
    const dir = process.argv[2];
    if (!dir) {
        console.error('usage: node run_cases.js CASES_DIR [--atol=A] [--rtol=R]');
        process.exit(2);
    }
    const atol = option('atol', 1e-4), rtol = option('rtol', 1e-4);
    const cases = JSON.parse(fs.readFileSync(path.join(dir, 'cases.json'), 'utf8'));
    const sessions = new Map();
    let failures = 0, runs = 0, worst = 0;
    for (const c of cases) {
        for (const r of c.runs) {
            const label = `${c.name} ${r.model} batch ${r.batch}`;
            try {
                const modelPath = path.join(dir, c.name, r.model);
                if (!sessions.has(modelPath)) sessions.set(modelPath, await ort.InferenceSession.create(modelPath));
                const session = sessions.get(modelPath);
                const feeds = {};
                const inputFile = path.join(dir, c.name, r.input);
                feeds.input = r.input_type === 'int64'
                    ? new ort.Tensor('int64', readTyped(inputFile, BigInt64Array), r.input_dims)
                    : new ort.Tensor('float32', readTyped(inputFile, Float32Array), r.input_dims);
                if (r.lengths)
                    feeds.lengths = new ort.Tensor('int32', readTyped(path.join(dir, c.name, r.lengths), Int32Array),
                                                   [r.batch]);
                const result = await session.run(feeds);
                const y = result.output;
                const want = readTyped(path.join(dir, c.name, r.output), Float32Array);
                if (!y) throw new Error('no output named "output"');
                if (y.dims[0] !== r.batch) throw new Error(`output dims [${y.dims}] do not start with the batch ${r.batch}`);
                if (y.data.length !== want.length)
                    throw new Error(`${y.data.length} output values [${y.dims}], snn has ${want.length}`);
                // A run may carry a looser tolerance of its own (rows of 300001 values).
                const a_tol = r.tolerance !== undefined ? Math.max(atol, r.tolerance) : atol;
                const r_tol = r.tolerance !== undefined ? Math.max(rtol, r.tolerance) : rtol;
                let maxDiff = 0, bad = -1;
                for (let i = 0; i < want.length; ++i) {
                    const a = y.data[i], b = want[i];
                    if (Number.isNaN(a) || Number.isNaN(b)) {
                        if (Number.isNaN(a) !== Number.isNaN(b) && bad < 0) bad = i;
                        continue;
                    }
                    const d = a === b ? 0 : Math.abs(a - b);
                    if (!(d <= a_tol + r_tol * Math.abs(b)) && bad < 0) bad = i;
                    if (d > maxDiff || Number.isNaN(d)) maxDiff = d;
                }
                ++runs;
                worst = Math.max(worst, maxDiff);
                if (bad >= 0) {
                    ++failures;
                    console.log(`FAIL ${label}: max |diff| ${maxDiff.toExponential(3)}; value ${bad}: ` +
                                `onnxruntime ${y.data[bad]}, snn ${want[bad]}`);
                } else {
                    console.log(`ok   ${label}: max |diff| ${maxDiff.toExponential(3)} over ${want.length} values` +
                                (r.tolerance !== undefined ? ` (tolerance ${a_tol})` : ''));
                }
            } catch (e) {
                ++failures;
                console.log(`FAIL ${label}: ${e.message}`);
            }
        }
    }
    console.log(`${runs} runs compared, ${failures} failed; largest difference ${worst.toExponential(3)} ` +
                `(tolerance ${atol} + ${rtol} |snn|), onnxruntime-node ${require('onnxruntime-node/package.json').version}`);
    if (runs === 0) {
        console.log('no runs in cases.json');
        process.exit(1);
    }
    process.exit(failures ? 1 : 0);
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
