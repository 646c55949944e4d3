// Token sampling on the GPU, the draw (one workgroup; sample_prep.wgsl has applied the repetition penalty,
// found each block's maximum and collected the candidates): temperature, then top-k, top-p and min-p as
// thresholds on the order keys of the candidates (found exactly by bisection over the 32-bit key space), then
// one draw from a counter-based RNG over the candidates in token order. Only the token id leaves the GPU: it is
// written to out[0] (the next step's input id) and state[3], and appended to the penalty ring. temp <= 0 is
// greedy (argmax, lowest index on ties) from the block maxima alone. Order follows transformers: penalty,
// temperature, top-k, top-p, min-p. Should the candidates overflow the list, the whole vocabulary is used.
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
var<workgroup> rf: array<f32, 256>;
var<workgroup> ru: array<u32, 256>;
var<workgroup> bcast: atomic<u32>;
const CAND_BASE = 514u;
const CAP = 2048u;
var<workgroup> ck: array<u32, 2048>; // candidate keys, sorted by token
var<workgroup> ci: array<u32, 2048>; // candidate tokens

// items: the candidates (sorted by token) or, after an overflow, the whole vocabulary
fn item_scaled(i: u32, use_cand: bool) -> f32 {
  if (use_cand) { return bitcast<f32>(select(~ck[i], ck[i] & 0x7fffffffu, (ck[i] & 0x80000000u) != 0u)); }
  return logits[i] / p.temp;
}
fn item_tok(i: u32, use_cand: bool) -> u32 { return select(i, ci[i], use_cand); }

fn key_of(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  return select(u | 0x80000000u, ~u, (u & 0x80000000u) != 0u);
}

fn sum_f(l: u32, v: f32) -> f32 {
  rf[l] = v;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (l < k) { rf[l] += rf[l + k]; }
    workgroupBarrier();
  }
  return workgroupUniformLoad(&rf[0]);
}

fn sum_u(l: u32, v: u32) -> u32 {
  ru[l] = v;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (l < k) { ru[l] += ru[l + k]; }
    workgroupBarrier();
  }
  return workgroupUniformLoad(&ru[0]);
}

fn max_u(l: u32, v: u32) -> u32 {
  ru[l] = v;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (l < k) { ru[l] = max(ru[l], ru[l + k]); }
    workgroupBarrier();
  }
  return workgroupUniformLoad(&ru[0]);
}

fn pcg(v: u32) -> u32 {
  let s = v * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}


@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u) {
  let l = lid.x;
  var chosen = 0u;
  if (p.temp <= 0.0) {
    // greedy: the largest block maximum, then the lowest index holding it
    var best = 0u;
    for (var b = l; b < p.n_blocks; b += WG) { best = max(best, work[2u + 2u * b]); }
    let kmax = max_u(l, best);
    var idx = 0xffffffffu;
    for (var b = l; b < p.n_blocks; b += WG) { if (work[2u + 2u * b] == kmax) { idx = min(idx, work[3u + 2u * b]); } }
    ru[l] = idx;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
      if (l < k) { ru[l] = min(ru[l], ru[l + k]); }
      workgroupBarrier();
    }
    chosen = ru[0];
    workgroupBarrier();
  } else {
    // the candidates, sorted by token (bitonic sort in workgroup memory), so the draw walks them in token order
    let count = work[0];
    let use_cand = count <= CAP;
    let n_items = select(p.V, count, use_cand);
    if (use_cand) {
      var n2 = 1u;
      while (n2 < count) { n2 <<= 1u; }
      for (var i = l; i < n2; i += WG) {
        if (i < count) { ck[i] = work[CAND_BASE + 2u * i]; ci[i] = work[CAND_BASE + 2u * i + 1u]; }
        else { ck[i] = 0u; ci[i] = 0xffffffffu; }
      }
      workgroupBarrier();
      for (var k = 2u; k <= n2; k <<= 1u) {
        for (var j = k >> 1u; j > 0u; j >>= 1u) {
          for (var i = l; i < n2; i += WG) {
            let o = i ^ j;
            if (o > i) {
              let up = (i & k) == 0u;
              if ((ci[i] > ci[o]) == up) {
                let tk = ck[i]; ck[i] = ck[o]; ck[o] = tk;
                let ti = ci[i]; ci[i] = ci[o]; ci[o] = ti;
              }
            }
          }
          workgroupBarrier();
        }
      }
    }
    var kmaxl = 0u;
    for (var i = l; i < n_items; i += WG) { kmaxl = max(kmaxl, key_of(item_scaled(i, use_cand))); }
    let kmax = max_u(l, kmaxl);
    let mbits = select(~kmax, kmax & 0x7fffffffu, (kmax & 0x80000000u) != 0u);
    let m = bitcast<f32>(mbits);
    var thr = 0u; // keep tokens whose key >= thr
    // 2. top-k: the largest key t with count(key >= t) >= k
    if (p.top_k > 0u && p.top_k < n_items) {
      var lo = 0u;
      var hi = 0xffffffffu;
      for (var it = 0u; it < 32u; it++) {
        let mid = lo + ((hi - lo) >> 1u) + ((hi - lo) & 1u);
        var c = 0u;
        for (var i = l; i < n_items; i += WG) { c += select(0u, 1u, key_of(item_scaled(i, use_cand)) >= mid); }
        let cnt = sum_u(l, c);
        if (cnt >= p.top_k) { lo = mid; } else { hi = mid - 1u; }
        if (lo == hi) { break; }
      }
      thr = max(thr, lo);
    }
    // 3. top-p: the largest key t with mass(key >= max(t, thr)) >= top_p * mass(key >= thr)
    if (p.top_p > 0.0 && p.top_p < 1.0) {
      var z = 0.0;
      for (var i = l; i < n_items; i += WG) {
        let s = item_scaled(i, use_cand);
        if (key_of(s) >= thr) { z += exp(s - m); }
      }
      let goal = p.top_p * sum_f(l, z);
      var lo = thr;
      var hi = kmax;
      for (var it = 0u; it < 32u; it++) {
        if (lo >= hi) { break; }
        let mid = lo + ((hi - lo) >> 1u) + ((hi - lo) & 1u);
        var a = 0.0;
        for (var i = l; i < n_items; i += WG) {
          let s = item_scaled(i, use_cand);
          if (key_of(s) >= mid) { a += exp(s - m); }
        }
        if (sum_f(l, a) >= goal) { lo = mid; } else { hi = mid - 1u; }
      }
      thr = max(thr, lo);
    }
    // 4. min-p: p(x) >= min_p * p(max)  <=>  s >= m + log(min_p)
    if (p.min_p > 0.0) { thr = max(thr, min(kmax, key_of(m + log(p.min_p)))); }
    // 5. draw: u in [0, Z), then find the token by a prefix sum over contiguous chunks
    let chunk = (n_items + WG - 1u) / WG;
    let c0 = min(l * chunk, n_items);
    let c1 = min(c0 + chunk, n_items);
    var part = 0.0;
    var last_kept = 0xffffffffu;
    for (var i = c0; i < c1; i++) {
      let s = item_scaled(i, use_cand);
      if (key_of(s) >= thr) { part += exp(s - m); last_kept = i; }
    }
    rf[l] = part;
    workgroupBarrier();
    // inclusive Hillis-Steele scan
    for (var off = 1u; off < WG; off <<= 1u) {
      var v = rf[l];
      if (l >= off) { v += rf[l - off]; }
      workgroupBarrier();
      rf[l] = v;
      workgroupBarrier();
    }
    let total = rf[WG - 1u];
    let r = pcg(p.seed ^ pcg(state[0] + 0x9e3779b9u));
    let u = f32(r >> 8u) * (1.0 / 16777216.0) * total;
    let before = select(0.0, rf[max(l, 1u) - 1u], l > 0u);
    // the highest-index thread with kept tokens takes the draw if rounding put u past the end
    let last_thread = max_u(l, select(0u, l + 1u, last_kept != 0xffffffffu)) - 1u;
    if (l == 0u) { atomicStore(&bcast, 0xffffffffu); }
    workgroupBarrier();
    if ((u >= before && u < rf[l] && last_kept != 0xffffffffu) || (u >= total && l == last_thread)) {
      var acc = before;
      var pick = last_kept;
      for (var i = c0; i < c1; i++) {
        let s = item_scaled(i, use_cand);
        if (key_of(s) >= thr) {
          acc += exp(s - m);
          if (u < acc) { pick = i; break; }
        }
      }
      atomicMin(&bcast, pick);
    }
    workgroupBarrier();
    chosen = item_tok(atomicLoad(&bcast), use_cand);
  }
  if (l == 0u) {
    out[0] = chosen;
    state[3] = chosen;
    state[0] = state[0] + 1u;
    if (p.ring_cap > 0u) {
      let w = state[2];
      state[4u + w] = chosen;
      state[2] = (w + 1u) % p.ring_cap;
      state[1] = min(state[1] + 1u, p.ring_cap);
    }
  }
}
