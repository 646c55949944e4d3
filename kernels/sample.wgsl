// Token sampling on the GPU, the draw (one workgroup). sample_prep.wgsl has applied the repetition penalty,
// found each block's maximum and, when sampling, the threshold key (temperature, then top-k, top-p and min-p,
// all found exactly over the whole vocabulary by radix selects spread over the blocks) and per block the
// prefix sums of the kept mass over 8-token chunks. The draw is one number from a counter-based RNG scaled
// by the kept mass, looked up in token order: the block (a scan over at most 256 block sums), the chunk (that
// block's 256 prefix sums) and the token (at most 8 recomputed weights); so the work here does not grow with
// the vocabulary or with how many tokens are kept. temp <= 0 is greedy (argmax, lowest index on ties) from
// the block maxima. Only the token id leaves the GPU: it is written to out[0] (the next step's input id) and
// state[3], and appended to the penalty ring.
// state: [0] draw counter, [1] tokens in the ring, [2] ring write index, [3] last token, [4..4+ring_cap) ring.
//! variant f32: X=0
struct Params { V: u32, top_k: u32, ring_cap: u32, seed: u32,
                temp: f32, top_p: f32, min_p: f32, n_blocks: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> state: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<storage, read> work: array<u32>;

const WG = 256u;
const BLOCK = 2048u;
const CHUNK = 8u;     // BLOCK / WG tokens per prefix-sum entry
// work layout, as in sample_prep.wgsl
const W_THR = 40u;
const W_MKEY = 41u;
const W_BLK = 64u;
const W_PRE = 15936u;
var<workgroup> rf: array<f32, 256>;
var<workgroup> ru: array<u32, 256>;
var<workgroup> bcast: atomic<u32>;

fn key_of(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  return select(u | 0x80000000u, ~u, (u & 0x80000000u) != 0u);
}
fn val_of(k: u32) -> f32 { return bitcast<f32>(select(~k, k & 0x7fffffffu, (k & 0x80000000u) != 0u)); }

fn max_u(l: u32, v: u32) -> u32 {
  ru[l] = v;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (l < k) { ru[l] = max(ru[l], ru[l + k]); }
    workgroupBarrier();
  }
  let r = ru[0];
  workgroupBarrier();
  return r;
}

fn min_u(l: u32, v: u32) -> u32 {
  ru[l] = v;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (l < k) { ru[l] = min(ru[l], ru[l + k]); }
    workgroupBarrier();
  }
  let r = ru[0];
  workgroupBarrier();
  return r;
}

fn pcg(v: u32) -> u32 {
  let s = v * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

// atomicMin over the workgroup of the candidates offered by the threads (0xffffffff: none)
fn pick_min(l: u32, offer: u32) -> u32 {
  if (l == 0u) { atomicStore(&bcast, 0xffffffffu); }
  workgroupBarrier();
  if (offer != 0xffffffffu) { atomicMin(&bcast, offer); }
  workgroupBarrier();
  let r = atomicLoad(&bcast);
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u) {
  let l = lid.x;
  // the sampled path's inputs are loaded first, so their latency overlaps the greedy reductions
  let thr = work[W_THR];
  let m = val_of(work[W_MKEY]);
  let bsum = select(0.0, bitcast<f32>(work[W_PRE + WG * l + WG - 1u]), l < p.n_blocks);
  let counter = state[0];
  // greedy: the largest block maximum, then the lowest index holding it (also the fallback below)
  var best = 0u;
  for (var b = l; b < p.n_blocks; b += WG) { best = max(best, work[W_BLK + 2u * b]); }
  let kbest = max_u(l, best);
  var idx = 0xffffffffu;
  for (var b = l; b < p.n_blocks; b += WG) {
    if (work[W_BLK + 2u * b] == kbest) { idx = min(idx, work[W_BLK + 2u * b + 1u]); }
  }
  var chosen = min_u(l, idx);
  if (p.temp > 0.0) {
    // 1. the block: u in [0, total) against the scan of the block sums (the last entry of each block's prefix)
    rf[l] = bsum;
    workgroupBarrier();
    for (var off = 1u; off < WG; off <<= 1u) {
      var v = rf[l];
      if (l >= off) { v += rf[l - off]; }
      workgroupBarrier();
      rf[l] = v;
      workgroupBarrier();
    }
    let total = rf[WG - 1u];
    let r = pcg(p.seed ^ pcg(counter + 0x9e3779b9u));
    let u = f32(r >> 8u) * (1.0 / 16777216.0) * total;
    let before = select(0.0, rf[max(l, 1u) - 1u], l > 0u);
    // rounding may put u at or past the end: then the last block with mass takes it
    let last_blk = max_u(l, select(0u, l + 1u, bsum > 0.0)) - 1u;
    let hit = bsum > 0.0 && ((u >= before && u < rf[l]) || (u >= total && l == last_blk));
    let blk = pick_min(l, select(0xffffffffu, l, hit));
    {
      // (blk is not uniform to the compiler: clamp it rather than branch around the barriers)
      let bk = min(blk, p.n_blocks - 1u);
      // 2. the chunk within the block, by its prefix sums; 3. the token, by recomputing the chunk's weights
      let ub = u - select(0.0, rf[max(bk, 1u) - 1u], bk > 0u);
      let pre = W_PRE + WG * bk;
      let incl = bitcast<f32>(work[pre + l]);
      let excl = select(0.0, bitcast<f32>(work[pre + max(l, 1u) - 1u]), l > 0u);
      let btotal = bitcast<f32>(work[pre + WG - 1u]);
      let last_chunk = max_u(l, select(0u, l + 1u, incl > excl)) - 1u;
      // every thread loads its chunk (fixed trip counts, no break), so the walk is not a chain of loads
      let i0 = bk * BLOCK + l * CHUNK;
      var xs: array<f32, 8>;
      for (var t = 0u; t < CHUNK; t++) { xs[t] = logits[min(i0 + t, p.V - 1u)]; }
      var offer = 0xffffffffu;
      if (incl > excl && ((ub >= excl && ub < incl) || (ub >= btotal && l == last_chunk))) {
        var acc = excl;
        var done = false;
        for (var t = 0u; t < CHUNK; t++) {
          let s = xs[t] / p.temp;
          if (i0 + t < p.V && !done && key_of(s) >= thr) {
            acc += exp(s - m);
            offer = i0 + t;
            done = ub < acc;
          }
        }
      }
      let tok = pick_min(l, offer);
      if (blk < p.n_blocks && tok < p.V) { chosen = tok; }
    }
  }
  if (l == 0u) {
    out[0] = chosen;
    state[3] = chosen;
    state[0] = state[0] + 1u;
    if (p.ring_cap > 0u) {
      let w = state[2] % p.ring_cap; // < ring_cap whatever the state buffer holds (it is, when the host wrote it)
      state[4u + w] = chosen;
      state[2] = (w + 1u) % p.ring_cap;
      state[1] = min(state[1], p.ring_cap - 1u) + 1u; // min(fill + 1, ring_cap) without wrapping at 2^32
    }
  }
}
