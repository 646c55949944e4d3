// Flash-decoding, pass 1: attention of one new token, split over the cached sequence. Workgroup (kvh, c)
// takes keys [c*128, c*128+128) of KV head kvh for all n_rep query heads that share it (GQA: K/V are read
// once for the group), keeping per head the chunk's max m, sum l and unnormalised output acc. Keys run to
// pos[0] (the token's position), starting at pos-window+1 with a sliding window. With a worst-case grid the
// chunks past the end exit at once; with an indirect grid (attn_grid.wgsl) they are never launched.
// partial: [n_kv_head][max_chunks][n_rep][head_dim + 2] (acc..., m, l). head_dim % 4 == 0,
// n_rep * head_dim <= 4096.
//! variant f32: KV_F16=0
//! variant f16: KV_F16=1
struct Params { n_head: u32, n_kv_head: u32, head_dim: u32, ctx: u32,
                q_stride: u32, q_off: u32, window: u32, max_chunks: u32,
                scale: f32, softcap: f32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
#include "lib/kv_load.wgsli"
@group(0) @binding(4) var<storage, read> pos: array<u32>;
@group(0) @binding(5) var<storage, read_write> partial: array<f32>;

const B = 128u;
var<workgroup> qs: array<vec4<f32>, 1024>; // [n_rep][head_dim / 4]
var<workgroup> ps: array<f32, 2048>;       // [n_rep][B] probabilities (<= 16 heads)
var<workgroup> red: array<f32, 128>;
var<workgroup> red4: array<vec4<f32>, 128>;

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
  if (j0 > last) { return; }        // past the end (worst-case grid): nothing to do, never read
  for (var i = l; i < n_rep * hd4; i += B) {
    let r = i / hd4;
    let d4 = i % hd4;
    let qb = p.q_off + (kvh * n_rep + r) * hd + 4u * d4;
    qs[i] = vec4<f32>(q[qb], q[qb + 1u], q[qb + 2u], q[qb + 3u]);
  }
  workgroupBarrier();
  let j = j0 + l;
  let valid = j >= first && j <= last;
  let kb = (kvh * p.ctx + j) * hd;
  // scores of key j for every query head of the group
  for (var r = 0u; r < n_rep; r++) {
    var s = -3.0e38;
    if (valid) {
      var dt = 0.0;
      for (var d4 = 0u; d4 < hd4; d4++) { dt += dot(qs[r * hd4 + d4], kload4(kb + 4u * d4)); }
      s = dt * p.scale;
      if (p.softcap > 0.0) { s = p.softcap * tanh(s / p.softcap); }
    }
    ps[r * B + l] = s;
  }
  workgroupBarrier();
  let nj = min(B, last + 1u - j0);
  let out_base = ((kvh * p.max_chunks + c) * n_rep) * (hd + 2u);
  // softmax pieces per head: chunk max m and sum l (probabilities overwrite the scores in ps)
  for (var r = 0u; r < n_rep; r++) {
    red[l] = ps[r * B + l];
    workgroupBarrier();
    for (var k = B / 2u; k > 0u; k >>= 1u) {
      if (l < k) { red[l] = max(red[l], red[l + k]); }
      workgroupBarrier();
    }
    let m = red[0];
    workgroupBarrier();
    var pj = 0.0;
    if (valid) { pj = exp(ps[r * B + l] - m); }
    ps[r * B + l] = pj;
    red[l] = pj;
    workgroupBarrier();
    for (var k = B / 2u; k > 0u; k >>= 1u) {
      if (l < k) { red[l] += red[l + k]; }
      workgroupBarrier();
    }
    if (l == 0u) {
      partial[out_base + r * (hd + 2u) + hd] = m;
      partial[out_base + r * (hd + 2u) + hd + 1u] = red[0];
    }
    workgroupBarrier();
  }
  // unnormalised outputs: all 128 threads work, as (key group g, 4-dim slice d4) pairs; each V slice is loaded
  // once and used for every head of the group
  let groups = B / hd4;
  let d4 = l % hd4;
  let g = l / hd4;
  var acc: array<vec4<f32>, 16>;
  for (var r = 0u; r < n_rep; r++) { acc[r] = vec4<f32>(0.0); }
  if (g < groups) {
    for (var jj = g; jj < nj; jj += groups) {
      let vv = vload4((kvh * p.ctx + j0 + jj) * hd + 4u * d4);
      for (var r = 0u; r < n_rep; r++) { acc[r] += ps[r * B + jj] * vv; }
    }
  }
  for (var r = 0u; r < n_rep; r++) {
    red4[l] = acc[r];
    workgroupBarrier();
    if (l < hd4) {
      var a = vec4<f32>(0.0);
      for (var gg = 0u; gg < groups; gg++) { a += red4[gg * hd4 + l]; }
      let ob = out_base + r * (hd + 2u) + 4u * l;
      partial[ob] = a.x;
      partial[ob + 1u] = a.y;
      partial[ob + 2u] = a.z;
      partial[ob + 3u] = a.w;
    }
    workgroupBarrier();
  }
}
