// Log probabilities of a decode step's draw (op_logprobs), from the logits the model gave (before the sampler's
// filters): the drawn token's and the top_n most likely tokens' (value order, the lower id first on ties), each
// logit minus log-sum-exp over the vocabulary. Two passes: `blocks` (one workgroup a block of 4096 logits: its
// maximum, its sum of exp(x - maximum) and its top_n), then `merge` (one workgroup: the log-sum-exp from the blocks'
// sums, the top_n among their candidates, the drawn id's). Only top_n + 3 words come back to the CPU.
//   logits: [n] f32; ids: [1] u32 (the drawn id, clamped to n - 1); work: [n_blocks][2 + 2 * 20] words;
//   out: [3 + 2 * 20] u32: id, its logprob (f32 bits), the count written, then (id, logprob) pairs
//! variant blocks: MERGE=0
//! variant merge: MERGE=1
struct Params { n: u32, n_blocks: u32, top_n: u32, _p0: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
#if MERGE
@group(0) @binding(2) var<storage, read> work: array<u32>;
@group(0) @binding(3) var<storage, read> ids: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
#else
@group(0) @binding(2) var<storage, read_write> work: array<u32>;
#endif

const BLOCK: u32 = 4096u;
const PER: u32 = 16u;        // logits a thread in a block
const STRIDE: u32 = 42u;     // words a block's record: max, sum, 20 (id, value) pairs
const NONE: u32 = 0xffffffffu;
const LOW: f32 = -3.402823e38;

var<workgroup> bv: array<f32, 256>;
var<workgroup> bi: array<u32, 256>;
var<workgroup> bc: array<u32, 256>;
var<workgroup> taken: array<u32, 160>; // merge: the candidates taken, a bit each (256 blocks x 20 at most)

// (value, id) a beats b: larger, or equal and a lower id; NONE never wins
fn beats(av: f32, ai: u32, bvv: f32, bii: u32) -> bool {
  if (ai == NONE) { return false; }
  if (bii == NONE) { return true; }
  return av > bvv || (av == bvv && ai < bii);
}

// the workgroup's best (bv, bi, bc from each thread) into slot 0
fn reduce_best(l: u32) {
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (l < k && beats(bv[l + k], bi[l + k], bv[l], bi[l])) {
      bv[l] = bv[l + k];
      bi[l] = bi[l + k];
      bc[l] = bc[l + k];
    }
    workgroupBarrier();
  }
}

fn reduce_max(l: u32) {
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (l < k) { bv[l] = max(bv[l], bv[l + k]); }
    workgroupBarrier();
  }
}

fn reduce_sum(l: u32) {
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (l < k) { bv[l] = bv[l] + bv[l + k]; }
    workgroupBarrier();
  }
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let l = lid.x;
#if MERGE
  // the log-sum-exp over the blocks
  var m = LOW;
  for (var b = l; b < p.n_blocks; b += 256u) { m = max(m, bitcast<f32>(work[b * STRIDE])); }
  bv[l] = m;
  reduce_max(l);
  let gm = bv[0];
  workgroupBarrier();
  var s = 0.0;
  for (var b = l; b < p.n_blocks; b += 256u) {
    s += bitcast<f32>(work[b * STRIDE + 1u]) * exp(bitcast<f32>(work[b * STRIDE]) - gm);
  }
  bv[l] = s;
  reduce_sum(l);
  let lse = gm + log(bv[0]);
  for (var w = l; w < 160u; w += 256u) { taken[w] = 0u; }
  // the top_n among the blocks' candidates
  let nc = p.n_blocks * p.top_n;
  var written = 0u;
  for (var r = 0u; r < p.top_n; r++) {
    var v = LOW;
    var id = NONE;
    var c = 0u;
    workgroupBarrier();
    for (var q = l; q < nc; q += 256u) {
      if ((taken[q >> 5u] & (1u << (q & 31u))) != 0u) { continue; }
      let b = q / p.top_n;
      let k = q % p.top_n;
      let ci = work[b * STRIDE + 2u + 2u * k];
      let cv = bitcast<f32>(work[b * STRIDE + 3u + 2u * k]);
      if (beats(cv, ci, v, id)) { v = cv; id = ci; c = q; }
    }
    bv[l] = v;
    bi[l] = id;
    bc[l] = c;
    reduce_best(l);
    if (bi[0] != NONE) {
      if (l == 0u) {
        taken[bc[0] >> 5u] |= 1u << (bc[0] & 31u);
        out[3u + 2u * r] = bi[0];
        out[4u + 2u * r] = bitcast<u32>(bv[0] - lse);
      }
      written = r + 1u;
    }
  }
  if (l == 0u) {
    let id = min(ids[0], p.n - 1u);
    out[0] = id;
    out[1] = bitcast<u32>(logits[id] - lse);
    out[2] = written;
  }
#else
  let base = wid.x * BLOCK;
  var vals: array<f32, 16>;
  var m = LOW;
  for (var k = 0u; k < PER; k++) {
    let i = base + k * 256u + l;
    vals[k] = select(LOW, logits[min(i, p.n - 1u)], i < p.n);
    m = max(m, vals[k]);
  }
  bv[l] = m;
  reduce_max(l);
  let bm = bv[0];
  workgroupBarrier();
  var s = 0.0;
  for (var k = 0u; k < PER; k++) {
    if (base + k * 256u + l < p.n) { s += exp(vals[k] - bm); }
  }
  bv[l] = s;
  reduce_sum(l);
  if (l == 0u) {
    work[wid.x * STRIDE] = bitcast<u32>(bm);
    work[wid.x * STRIDE + 1u] = bitcast<u32>(bv[0]);
  }
  var mine = 0u; // this thread's logits taken, a bit each
  for (var r = 0u; r < p.top_n; r++) {
    var v = LOW;
    var id = NONE;
    var c = 0u;
    for (var k = 0u; k < PER; k++) {
      let i = base + k * 256u + l;
      if (i < p.n && (mine & (1u << k)) == 0u && beats(vals[k], i, v, id)) { v = vals[k]; id = i; c = k; }
    }
    workgroupBarrier();
    bv[l] = v;
    bi[l] = id;
    bc[l] = c;
    reduce_best(l);
    let wi = bi[0];
    if (wi != NONE && (wi & 255u) == l) { mine |= 1u << bc[0]; }
    if (l == 0u) {
      work[wid.x * STRIDE + 2u + 2u * r] = wi;
      work[wid.x * STRIDE + 3u + 2u * r] = bitcast<u32>(bv[0]);
    }
  }
#endif
}
