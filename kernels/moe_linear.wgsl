// Mixture-of-experts expert linear on routed rows (src/ops/op_moe.c, op_moe_linear): for each pair q = t * k + j
// (token t's slot j) routed to expert e, y[q][n] = W[e][n] . x[r] (+ bias[e][n]) for n < N, x's row r the token t
// (x_pair 0: x [T][K], the gate/up projection) or the pair q (x_pair 1: x [T * k][K], the down projection);
// y [T * k][N] f32. W [E][rows_w][K] in any weight storage (lib/weight_load.wgsli; expert e's rows start at element
// e * rows_w * K), bias [E][rows_w] f32 (has_bias). With glu, W holds each expert's N gate rows then its N up rows
// (rows_w = 2N) and y[q][n] = act(gate_n, up_n) with each row's bias added first:
//   act 0 SiLU: silu(g) * u;  1 GELU-tanh: gelu(g) * u (Gemma 4);
//   act 2 gpt-oss's clamped SwiGLU: g = min(g, limit), u = clamp(u, -limit, limit), (u + 1) * g * sigmoid(alpha g)
// Two routes:
//   "" (the pairs route, decode): a workgroup computes 8 outputs n of one pair (grid ceil(N / 8) x np), its expert
//      read from route = ids [T][k]; 8 groups of 32 lanes stride over K, as kernels/matvec.wgsl.
//   "_tile" (grouped, prefill): a workgroup computes a tile of TM = 16 pairs of one expert x 32 outputs n (both
//      the gate and up rows with glu), walking K in steps of 32 staged in workgroup memory, so each expert's weight
//      is read once for every 16 of its pairs. route = the lists of op_moe_lists (kernels/moe_lists.wgsl): with
//      expert == NONE, workgroup y is tile y of the tile table (grid y: the worst case max_tiles, the workgroups
//      past L[0] exit); else it is tile y of that one expert's pairs (an indirect grid from op_moe_indirect, the
//      workgroups past its pairs exit).
// A weight in parts (over the binding limit, or of several storages) is split at expert boundaries: one dispatch a
// part, W holding experts e_base .. e_base + e_count - 1 (their rows from element 0); pairs and tiles of other
// experts are left to the other parts' dispatches (the bias stays whole, indexed by the expert).
//! axis storage
//! axis -: TILE=0 | _tile: TILE=1
struct Params {
  N: u32, K: u32, k: u32, np: u32, E: u32, rows_w: u32, glu: u32, act: u32,
  x_pair: u32, has_bias: u32, alpha: f32, limit: f32, expert: u32, off_off: u32, off_ent: u32, off_tile: u32,
  e_base: u32, e_count: u32, _p0: u32, _p1: u32
};
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
#define WBIND 2
#define SBIND 6
#define WDOT8 1
#include "lib/weight_load.wgsli"
#include "lib/glu_act.wgsli"
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read> route: array<u32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;

const NONE = 0xffffffffu;

// the output of gate row sum g and up row sum u of expert e's column n (bias added here)
fn finish(e: u32, n: u32, g0: f32, u0: f32) -> f32 {
  var g = g0;
  var u = u0;
  if (p.has_bias != 0u) {
    g += bias[e * p.rows_w + n];
    if (p.glu != 0u) { u += bias[e * p.rows_w + p.N + n]; }
  }
  if (p.glu == 0u) { return g; }
  return glu_act(p.act, g, u, p.alpha, p.limit);
}

#if TILE
const TM = 16u;
const TN = 32u;
const KC = 32u;
const ROW = 33u; // a staged row of KC values and one of padding (fewer bank conflicts)
var<workgroup> xs: array<f32, 528>;  // [TM][ROW]
var<workgroup> ws: array<f32, 2112>; // [2 * TN][ROW]: gate rows, then up rows
var<workgroup> rowq: array<u32, 16>; // the tile's pairs (NONE past its end)
var<workgroup> tile: vec4<u32>;      // expert, first entry, entries end, valid

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let li = lid.x;
  let n0 = wid.x * TN;
  if (li == 0u) {
    var tl = vec4<u32>(0u, 0u, 0u, 0u);
    if (p.expert == NONE) {
      if (wid.y < route[0]) {
        let e = min(route[p.off_tile + 2u * wid.y], p.E - 1u);
        let r0 = route[p.off_tile + 2u * wid.y + 1u];
        tl = vec4<u32>(e, r0, min(r0 + TM, route[p.off_off + e + 1u]), 1u);
      }
    } else {
      let e = p.expert;
      let r0 = route[p.off_off + e] + wid.y * TM;
      let r1 = min(r0 + TM, route[p.off_off + e + 1u]);
      tl = vec4<u32>(e, r0, r1, select(0u, 1u, r0 < r1));
    }
    tile = tl;
  }
  let tl = workgroupUniformLoad(&tile);
  if (tl.w == 0u || n0 >= p.N || tl.x < p.e_base || tl.x - p.e_base >= p.e_count) { return; }
  let e = tl.x;
  if (li < TM) {
    var q = NONE;
    if (tl.y + li < tl.z) { q = min(route[p.off_ent + tl.y + li], p.np - 1u); }
    rowq[li] = q;
  }
  let nw = select(1u, 2u, p.glu != 0u); // weight row sets staged: gate (and up)
  let wbase = (e - p.e_base) * p.rows_w;
  var acc: array<f32, 4>; // rows 2 rg and 2 rg + 1: gate, gate, up, up
  let col = li % TN;
  let rg = li / TN;
  workgroupBarrier();
  for (var k0 = 0u; k0 < p.K; k0 += KC) {
    for (var i = li; i < TM * KC; i += 256u) {
      let r = i / KC;
      let kk = i % KC;
      let q = rowq[r];
      var v = 0.0;
      if (q != NONE && k0 + kk < p.K) {
        let xr = select(q / p.k, q, p.x_pair != 0u);
        v = x[xr * p.K + k0 + kk];
      }
      xs[r * ROW + kk] = v;
    }
#if WBLK
    // 8 consecutive elements of one row a thread (K is whole blocks, so a multiple of 32)
    for (var i = li; i < nw * TN * 4u; i += 256u) {
      let c = i / 4u;
      let kk = (i % 4u) * 8u;
      let nn = n0 + c % TN;
      var v: array<f32, 8>;
      if (nn < p.N) { v = wload8((wbase + (c / TN) * p.N + nn) * p.K + k0 + kk); }
      for (var j = 0u; j < 8u; j++) { ws[c * ROW + kk + j] = v[j]; }
    }
#else
    for (var i = li; i < nw * TN * KC; i += 256u) {
      let c = i / KC;
      let kk = i % KC;
      let nn = n0 + c % TN;
      var v = 0.0;
      if (nn < p.N && k0 + kk < p.K) { v = wload((wbase + (c / TN) * p.N + nn) * p.K + k0 + kk); }
      ws[c * ROW + kk] = v;
    }
#endif
    workgroupBarrier();
    for (var kk = 0u; kk < KC; kk++) {
      let x0 = xs[(2u * rg) * ROW + kk];
      let x1 = xs[(2u * rg + 1u) * ROW + kk];
      let wg = ws[col * ROW + kk];
      acc[0] += x0 * wg;
      acc[1] += x1 * wg;
      if (p.glu != 0u) {
        let wu = ws[(TN + col) * ROW + kk];
        acc[2] += x0 * wu;
        acc[3] += x1 * wu;
      }
    }
    workgroupBarrier();
  }
  let n = n0 + col;
  if (n >= p.N) { return; }
  for (var r = 0u; r < 2u; r++) {
    let q = rowq[2u * rg + r];
    if (q != NONE) { y[q * p.N + n] = finish(e, n, acc[r], acc[2u + r]); }
  }
}
#else
var<workgroup> red: array<f32, 256>;
var<workgroup> redu: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let lane = lid.x % 32u;
  let r = lid.x / 32u;
  let n = wid.x * 8u + r;
  let q = wid.y;
  var sg = 0.0;
  var su = 0.0;
  var e = 0u;
  if (q < p.np) { e = min(route[q], p.E - 1u); }
  let mine = q < p.np && e >= p.e_base && e - p.e_base < p.e_count; // the pair's expert is in this part
  if (n < p.N && mine) {
    let wg = ((e - p.e_base) * p.rows_w + n) * p.K;
    let wu = ((e - p.e_base) * p.rows_w + p.N + n) * p.K;
    let xb = select(q / p.k, q, p.x_pair != 0u) * p.K;
#if WBLK
    // block types: a lane takes 8 elements of one sub-block at a time (K is whole blocks)
    for (var kk = lane * 8u; kk < p.K; kk += 256u) {
      sg += wdot8(wg + kk, xb + kk);
      if (p.glu != 0u) { su += wdot8(wu + kk, xb + kk); }
    }
#else
    for (var kk = lane; kk < p.K; kk += 32u) {
      let xv = x[xb + kk];
      sg += xv * wload(wg + kk);
      if (p.glu != 0u) { su += xv * wload(wu + kk); }
    }
#endif
  }
  red[lid.x] = sg;
  redu[lid.x] = su;
  workgroupBarrier();
  for (var o = 16u; o > 0u; o >>= 1u) {
    if (lane < o) {
      red[lid.x] += red[lid.x + o];
      redu[lid.x] += redu[lid.x + o];
    }
    workgroupBarrier();
  }
  if (lane == 0u && n < p.N && mine) { y[q * p.N + n] = finish(e, n, red[lid.x], redu[lid.x]); }
}
#endif
