// ort_peak.js — runs one ONNX model in ONNX Runtime (onnxruntime-node, CPU)
// under the heap counter (heapcount.so preloaded) and prints its
// steady-state activation peak as JSON.
//
// usage: node ort_peak.js MODEL.onnx CONFIG [SAVED.onnx]
// CONFIG: mempattern (arena off, memory pattern on: ORT's planner),
//         pertensor  (arena off, memory pattern off: one malloc per tensor),
//         arena      (ORT's defaults: arena and memory pattern on).
// Every config uses the basic graph optimization level and one intra-op and
// one inter-op thread, so runs are deterministic.  SAVED: where to write
// ORT's optimized graph (optimizedModelFilePath).
//
// Method: every graph input is filled with a fixed ramp (symbolic dims are 1);
// the session runs once (warm-up: lazily made kernels state, the memory
// pattern, thread-local buffers), then the counter is reset (baseline = live
// bytes now) and the session runs again; peak - baseline is the activation
// peak of that run (the run's tensors, workspaces and outputs).  For the
// arena config the baseline is taken before the warm-up instead, since the
// arena keeps what it grew in the warm-up: the figure is what running added
// to the heap and holds at the steady run's peak.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(process.env.ORT_NODE_MODULE || 'onnxruntime-node');

const TYPES = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  int8: Int8Array, uint8: Uint8Array, bool: Uint8Array,
};

function control(cmd) { fs.accessSync('/heapcount/' + cmd); }
function report() {
  control('report');
  const [live, peak, base] = fs.readFileSync(process.env.HEAPCOUNT_OUT, 'utf8').trim().split(' ').map(Number);
  return { live, peak, base };
}

async function main() {
  const [model, config, saved] = process.argv.slice(2);
  if (!model || !['mempattern', 'pertensor', 'arena'].includes(config)) {
    console.error('usage: node ort_peak.js MODEL.onnx mempattern|pertensor|arena [SAVED.onnx]');
    process.exit(2);
  }
  const opts = {
    executionProviders: ['cpu'], graphOptimizationLevel: 'basic',
    intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
    enableCpuMemArena: config === 'arena', enableMemPattern: config !== 'pertensor',
  };
  if (saved) opts.optimizedModelFilePath = path.resolve(saved);
  const session = await ort.InferenceSession.create(model, opts);
  const meta = session.inputMetadata || [];
  const feeds = {};
  session.inputNames.forEach((name, k) => {
    const md = meta[k] || {};
    const type = md.type || 'float32';
    const dims = (md.shape || []).map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const Arr = TYPES[type];
    if (!Arr) throw new Error(`input ${name}: type ${type} not supported by this bench`);
    const data = new Arr(n);
    for (let i = 0; i < n; i++) data[i] = Arr === BigInt64Array ? 0n : (type === 'bool' ? 0 : (i % 251) / 251);
    feeds[name] = new ort.Tensor(type, data, dims);
  });
  if (config === 'arena') control('reset');
  let out = await session.run(feeds);
  for (const k in out) if (out[k].dispose) out[k].dispose();
  out = null;
  if (config !== 'arena') control('reset');
  out = await session.run(feeds);
  const r = report();
  let outBytes = 0;
  for (const k in out) outBytes += out[k].data.byteLength || 0;
  console.log(JSON.stringify({ model: path.basename(model), config, peak: r.peak - r.base, base: r.base, outBytes }));
}

main().catch((e) => { console.error(String(e && e.message || e)); process.exit(1); });
