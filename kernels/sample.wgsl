// Token sampling on the GPU, one workgroup: repetition penalty over a GPU-side ring of recent tokens,
// temperature, then top-k, top-p and min-p as thresholds on the logits' order keys (found exactly by
// bisection over the 32-bit key space), then one draw from a counter-based RNG. Only the token id leaves the
// GPU: it is written to out[0] (the next step's input id) and state[3]. temp <= 0 is greedy (argmax, lowest
// index on ties). Order follows transformers: penalty, temperature, top-k, top-p, min-p.
// state: [0] draw counter, [1] tokens in the ring, [2] ring write index, [3] last token, [4..4+ring_cap) ring.
//! variant f32: X=0
struct Params { V: u32, top_k: u32, ring_cap: u32, seed: u32,
                temp: f32, top_p: f32, min_p: f32, rep_penalty: f32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> state: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

const WG = 256u;
var<workgroup> rf: array<f32, 256>;
var<workgroup> ru: array<u32, 256>;
var<workgroup> bcast: atomic<u32>;

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

fn scaled(i: u32) -> f32 { return logits[i] / p.temp; }

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u) {
  let l = lid.x;
  let V = p.V;
  let n_ring = min(state[1], p.ring_cap);
  // 1. repetition penalty, once per distinct recent token (one thread: the ring is short)
  if (l == 0u && p.rep_penalty != 1.0) {
    for (var i = 0u; i < n_ring; i++) {
      let t = state[4u + i];
      var dup = false;
      for (var j = 0u; j < i; j++) { if (state[4u + j] == t) { dup = true; } }
      if (!dup && t < V) {
        let x = logits[t];
        logits[t] = select(x * p.rep_penalty, x / p.rep_penalty, x > 0.0);
      }
    }
  }
  storageBarrier();
  workgroupBarrier();
  var chosen = 0u;
  if (p.temp <= 0.0) {
    // greedy: the largest key, then the lowest index holding it
    var best = 0u;
    for (var i = l; i < V; i += WG) { best = max(best, key_of(logits[i])); }
    let kmax = max_u(l, best);
    var idx = 0xffffffffu;
    for (var i = l; i < V; i += WG) { if (key_of(logits[i]) == kmax) { idx = min(idx, i); } }
    ru[l] = idx;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
      if (l < k) { ru[l] = min(ru[l], ru[l + k]); }
      workgroupBarrier();
    }
    chosen = ru[0];
    workgroupBarrier();
  } else {
    var kmaxl = 0u;
    for (var i = l; i < V; i += WG) { kmaxl = max(kmaxl, key_of(scaled(i))); }
    let kmax = max_u(l, kmaxl);
    let mbits = select(~kmax, kmax & 0x7fffffffu, (kmax & 0x80000000u) != 0u);
    let m = bitcast<f32>(mbits);
    var thr = 0u; // keep tokens whose key >= thr
    // 2. top-k: the largest key t with count(key >= t) >= k
    if (p.top_k > 0u && p.top_k < V) {
      var lo = 0u;
      var hi = 0xffffffffu;
      for (var it = 0u; it < 32u; it++) {
        let mid = lo + ((hi - lo) >> 1u) + ((hi - lo) & 1u);
        var c = 0u;
        for (var i = l; i < V; i += WG) { c += select(0u, 1u, key_of(scaled(i)) >= mid); }
        let cnt = sum_u(l, c);
        if (cnt >= p.top_k) { lo = mid; } else { hi = mid - 1u; }
        if (lo == hi) { break; }
      }
      thr = max(thr, lo);
    }
    // 3. top-p: the largest key t with mass(key >= max(t, thr)) >= top_p * mass(key >= thr)
    if (p.top_p > 0.0 && p.top_p < 1.0) {
      var z = 0.0;
      for (var i = l; i < V; i += WG) {
        let s = scaled(i);
        if (key_of(s) >= thr) { z += exp(s - m); }
      }
      let goal = p.top_p * sum_f(l, z);
      var lo = thr;
      var hi = kmax;
      for (var it = 0u; it < 32u; it++) {
        if (lo >= hi) { break; }
        let mid = lo + ((hi - lo) >> 1u) + ((hi - lo) & 1u);
        var a = 0.0;
        for (var i = l; i < V; i += WG) {
          let s = scaled(i);
          if (key_of(s) >= mid) { a += exp(s - m); }
        }
        if (sum_f(l, a) >= goal) { lo = mid; } else { hi = mid - 1u; }
      }
      thr = max(thr, lo);
    }
    // 4. min-p: p(x) >= min_p * p(max)  <=>  s >= m + log(min_p)
    if (p.min_p > 0.0) { thr = max(thr, min(kmax, key_of(m + log(p.min_p)))); }
    // 5. draw: u in [0, Z), then find the token by a prefix sum over contiguous chunks
    let chunk = (V + WG - 1u) / WG;
    let c0 = min(l * chunk, V);
    let c1 = min(c0 + chunk, V);
    var part = 0.0;
    var last_kept = 0xffffffffu;
    for (var i = c0; i < c1; i++) {
      let s = scaled(i);
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
        let s = scaled(i);
        if (key_of(s) >= thr) {
          acc += exp(s - m);
          if (u < acc) { pick = i; break; }
        }
      }
      atomicMin(&bcast, pick);
    }
    workgroupBarrier();
    chosen = atomicLoad(&bcast);
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
