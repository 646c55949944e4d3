// Flash-decoding, pass 1: attention of one new token, split over the cached sequence. Workgroup (kvh, c)
// takes keys [c*B, c*B+B) of KV head kvh for all n_rep query heads that share it (GQA: K/V are read once for
// the group), keeping per head the chunk's max m, sum l and unnormalised output acc. Keys run to pos[0] (the
// token's position), starting at pos-window+1 with a sliding window. Chunks past the end exit at once (the
// grid is the worst case of the recording's length bucket) or are never launched (indirect grid).
// The chunk length B (32, 64 or 128) is chosen per bucket so that short contexts still spread over many
// workgroups. Phases: scores of every (head, key) pair; max and sum per head by NP = 128 / n_rep_pow2 threads
// each (a few workgroup barriers in all, not a reduction tree per head); outputs with one thread per
// (head, 4 dims), each running over the chunk's keys (no reduction).
// partial: [n_kv_head][max_chunks][n_rep][head_dim + 2] (acc..., m, l). head_dim % 4 == 0,
// n_rep <= 16, n_rep * head_dim <= 4096.
// Variants "sg": the max and sum of a head are one subgroupMax / subgroupAdd when a head's NP threads are
// exactly one subgroup (the op checks it), with no workgroup barriers.
//! variant f32: KV_F16=0 SG=0
//! variant f16: KV_F16=1 SG=0
//! variant f32sg: KV_F16=0 SG=1 requires=subgroups
//! variant f16sg: KV_F16=1 SG=1 requires=subgroups
struct Params { n_head: u32, n_kv_head: u32, head_dim: u32, ctx: u32,
                q_stride: u32, q_off: u32, window: u32, max_chunks: u32,
                scale: f32, softcap: f32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
#include "lib/kv_load.wgsli"
@group(0) @binding(4) var<storage, read> pos: array<u32>;
@group(0) @binding(5) var<storage, read_write> partial: array<f32>;

override B: u32 = 128u;
const WG = 128u;
var<workgroup> qs: array<vec4<f32>, 1024>; // [n_rep][head_dim / 4]
var<workgroup> ps: array<f32, 2048>;       // [n_rep][B] scores, then probabilities (n_rep * B <= 2048)
var<workgroup> red: array<f32, 128>;       // [n_rep_pow2][NP] partial max / sum

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let l = lid.x;
  let kvh = wid.x;
  let c = wid.y;
  let hd = p.head_dim;
  let hd4 = hd / 4u;
  let n_rep = p.n_head / p.n_kv_head;
  let last = min(pos[0], p.ctx - 1u);
  var first = 0u;
  if (p.window > 0u && last + 1u > p.window) { first = last + 1u - p.window; }
  let j0 = (first / B) * B + c * B; // chunks are aligned to B from the window's first block
  if (j0 > last) { return; }        // past the end: nothing to do, never read
  let nj = min(B, last + 1u - j0);
  for (var i = l; i < n_rep * hd4; i += WG) {
    let r = i / hd4;
    let d4 = i % hd4;
    let qb = p.q_off + (kvh * n_rep + r) * hd + 4u * d4;
    qs[i] = vec4<f32>(q[qb], q[qb + 1u], q[qb + 2u], q[qb + 3u]);
  }
  workgroupBarrier();
  // scores of every (head r, key j) pair of the chunk
  for (var i = l; i < n_rep * B; i += WG) {
    let r = i / B;
    let j = j0 + i % B;
    var s = -3.0e38;
    if (j >= first && j <= last) {
      let kb = (kvh * p.ctx + j) * hd;
      var dt = 0.0;
      for (var d4 = 0u; d4 < hd4; d4++) { dt += dot(qs[r * hd4 + d4], kload4(kb + 4u * d4)); }
      s = dt * p.scale;
      if (p.softcap > 0.0) { s = p.softcap * tanh(s / p.softcap); }
    }
    ps[i] = s;
  }
  workgroupBarrier();
  // max and sum per head: NP threads a head, each over B / NP keys, then a tree over the NP
  var rp = 1u;
  while (rp < n_rep) { rp *= 2u; }
  let np = WG / rp;
  let r = l / np;
  let t = l % np;
  var m = -3.0e38;
  if (r < n_rep) {
    for (var j = t; j < B; j += np) { m = max(m, ps[r * B + j]); }
  }
#if SG
  m = subgroupMax(m);
#else
  red[l] = m;
  workgroupBarrier();
  for (var k = np / 2u; k > 0u; k >>= 1u) {
    if (t < k) { red[l] = max(red[l], red[l + k]); }
    workgroupBarrier();
  }
  m = red[l - t];
  workgroupBarrier();
#endif
  var sm = 0.0;
  if (r < n_rep) {
    for (var j = t; j < B; j += np) {
      var pj = 0.0;
      if (j < nj && j0 + j >= first) { pj = exp(ps[r * B + j] - m); }
      ps[r * B + j] = pj;
      sm += pj;
    }
  }
#if SG
  sm = subgroupAdd(sm);
  workgroupBarrier(); // the probabilities in ps are read by other threads below
#else
  red[l] = sm;
  workgroupBarrier();
  for (var k = np / 2u; k > 0u; k >>= 1u) {
    if (t < k) { red[l] += red[l + k]; }
    workgroupBarrier();
  }
  sm = red[l - t];
#endif
  let out_base = ((kvh * p.max_chunks + c) * n_rep) * (hd + 2u);
  if (t == 0u && r < n_rep) {
    partial[out_base + r * (hd + 2u) + hd] = m;
    partial[out_base + r * (hd + 2u) + hd + 1u] = sm;
  }
  // unnormalised outputs: one thread per (head, 4 dims) over the chunk's keys
  let vb = (kvh * p.ctx + j0) * hd;
  for (var i = l; i < n_rep * hd4; i += WG) {
    let rr = i / hd4;
    let d4 = i % hd4;
    var a = vec4<f32>(0.0);
    for (var j = 0u; j < nj; j++) { a += ps[rr * B + j] * vload4(vb + j * hd + 4u * d4); }
    let ob = out_base + rr * (hd + 2u) + 4u * d4;
    partial[ob] = a.x;
    partial[ob + 1u] = a.y;
    partial[ob + 2u] = a.z;
    partial[ob + 3u] = a.w;
  }
}
