// Sampling, the passes before the draw (see sample.wgsl), spread over many workgroups so no single workgroup
// walks the whole vocabulary:
//   penalty: the repetition penalty, once per distinct token of the GPU-side ring (one workgroup);
//   max:     per 2048-token block, the largest order key of the (temperature-scaled) logits and its lowest index;
//            also zeroes the candidate count;
//   collect: every token whose scaled logit is within CUT (30) of the maximum is appended to the candidate
//            list (p / p_max > e^-30: what is left out carries less than 1e-8 of the probability).
// work: u32 [0] candidate count, [2 + 2b], [3 + 2b] block b's key and index (b < 256), [514 + 2i], [515 + 2i]
// candidate i's key and token (i < 2048).
//! variant penalty: PENALTY=1 MAX=0 COLLECT=0
//! variant max: PENALTY=0 MAX=1 COLLECT=0
//! variant collect: PENALTY=0 MAX=0 COLLECT=1
struct Params { V: u32, n_blocks: u32, ring_cap: u32, _p: u32, temp: f32, rep_penalty: f32, cut: f32, _q: f32 };
@group(0) @binding(0) var<uniform> p: Params;
#if PENALTY
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;
@group(0) @binding(2) var<storage, read> state: array<u32>;
#else
@group(0) @binding(1) var<storage, read> logits: array<f32>;
#endif
#if MAX
@group(0) @binding(2) var<storage, read_write> work: array<u32>;
#endif
#if COLLECT
@group(0) @binding(2) var<storage, read_write> work: array<atomic<u32>>;
#endif

const WG = 256u;
const BLOCK = 2048u;
const CAND_BASE = 514u;
const CAP = 2048u;
var<workgroup> bk: array<u32, 256>;
var<workgroup> bi: array<u32, 256>;

fn key_of(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  return select(u | 0x80000000u, ~u, (u & 0x80000000u) != 0u);
}
fn val_of(k: u32) -> f32 { return bitcast<f32>(select(~k, k & 0x7fffffffu, (k & 0x80000000u) != 0u)); }
fn scaled(i: u32) -> f32 {
  if (p.temp > 0.0) { return logits[i] / p.temp; }
  return logits[i];
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let l = lid.x;
#if PENALTY
  if (l == 0u && wid.x == 0u) {
    let n_ring = min(state[1], p.ring_cap);
    for (var i = 0u; i < n_ring; i++) {
      let t = state[4u + i];
      var dup = false;
      for (var j = 0u; j < i; j++) { if (state[4u + j] == t) { dup = true; } }
      if (!dup && t < p.V) {
        let x = logits[t];
        logits[t] = select(x * p.rep_penalty, x / p.rep_penalty, x > 0.0);
      }
    }
  }
#endif
#if MAX
  let b = wid.x;
  var best = 0u;
  var besti = 0xffffffffu;
  for (var i = b * BLOCK + l; i < min((b + 1u) * BLOCK, p.V); i += WG) {
    let k = key_of(scaled(i));
    if (k > best || besti == 0xffffffffu) { best = k; besti = i; }
  }
  bk[l] = best;
  bi[l] = besti;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (l < s) {
      let ok = bk[l + s];
      let oi = bi[l + s];
      if (oi != 0xffffffffu && (bi[l] == 0xffffffffu || ok > bk[l] || (ok == bk[l] && oi < bi[l]))) { bk[l] = ok; bi[l] = oi; }
    }
    workgroupBarrier();
  }
  if (l == 0u) {
    work[2u + 2u * b] = bk[0];
    work[3u + 2u * b] = bi[0];
    if (b == 0u) { work[0] = 0u; }
  }
#endif
#if COLLECT
  // the global maximum from the blocks' maxima
  var kmax = 0u;
  for (var i = l; i < p.n_blocks; i += WG) { kmax = max(kmax, atomicLoad(&work[2u + 2u * i])); }
  bk[l] = kmax;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (l < s) { bk[l] = max(bk[l], bk[l + s]); }
    workgroupBarrier();
  }
  let cut = key_of(val_of(bk[0]) - p.cut);
  let b = wid.x;
  for (var i = b * BLOCK + l; i < min((b + 1u) * BLOCK, p.V); i += WG) {
    let k = key_of(scaled(i));
    if (k >= cut) {
      let slot = atomicAdd(&work[0], 1u);
      if (slot < CAP) {
        atomicStore(&work[CAND_BASE + 2u * slot], k);
        atomicStore(&work[CAND_BASE + 2u * slot + 1u], i);
      }
    }
  }
#endif
}
