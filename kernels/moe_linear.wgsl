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
//   "_tile" (grouped, prefill): a workgroup computes a tile of TM = 64 pairs of one expert x 128 outputs n (64 with
//      glu: their gate and up rows), the dense prefill GEMM's tile (below), so each expert's weight is read once for
//      every 64 of its pairs. route = the lists of op_moe_lists (kernels/moe_lists.wgsl): with
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

#include "lib/moe_tile_out.wgsli"

#if TILE
// The tile GEMM of kernels/matmul.wgsl (the prefill GEMM of the dense layers, measured there) on one expert's pairs:
// a workgroup of 256 threads (16 x 16) owns TM = 64 pairs (rows m, gathered through the lists) by TN = 128 weight rows
// (columns: 128 outputs, or with glu 64 outputs' gate rows then their up rows, so each thread holds the gate and up
// sums of its outputs) and walks K in steps of 16, staging X[TM][16] and W[128][16] (dequantized once) K-major with a
// vec4 of padding a row, the next step's values fetched into registers while a step is multiplied; each thread
// accumulates 4 x 8 outputs: rows ty*4.., columns tx*4.. and 64 + tx*4.., so a step costs it 3 vec4 loads of
// workgroup memory for 32 FMAs.
const TM = 64u;
const TN = 128u;
const TK = 16u;
const ROW4 = 33u;                         // vec4s a K row of a staged tile: 128 values + one vec4 of padding
var<workgroup> xs: array<vec4<f32>, 528>; // [TK][ROW4]: X[pair 4q + c][k0 + kk] at xs[kk * ROW4 + q][c] (q < 16)
var<workgroup> ws: array<vec4<f32>, 528>; // [TK][ROW4]: W[column 4q + c][k0 + kk] likewise
var<workgroup> rowx: array<u32, 64>;      // the x row of each of the tile's pairs (NONE past its end)
var<workgroup> tile: vec4<u32>;           // expert, first entry, entries end, valid

// element l of the [TM][TK] X tile of step k0 (pair l / TK, column l % TK), 0 past the tile's pairs or K
fn load_x(k0: u32, l: u32) -> f32 {
  let r = rowx[l / TK];
  let gk = k0 + l % TK;
  return select(0.0, x[select(0u, r, r != NONE) * p.K + gk], r != NONE && gk < p.K);
}
#if WBLK
// block types: 8 consecutive elements of column li / 2 (elements (li % 2) * 8 ..) with one wload8 (K is whole blocks)
fn w_col(li: u32, i: u32) -> u32 { return li / 2u; }
fn w_k(li: u32, i: u32) -> u32 { return (li % 2u) * 8u + i; }
fn load_w(wbase: u32, n0: u32, k0: u32, li: u32) -> array<f32, 8> {
  let wr = w_row(wbase, n0, li / 2u);
  var v: array<f32, 8>;
  if (wr.y != 0u) { v = wload8(wr.x * p.K + k0 + (li % 2u) * 8u); }
  return v;
}
#else
// the other storages: element l = li + 256 i of the tile, column l / TK and k l % TK, so 16 threads share a row's 16
// consecutive elements
fn w_col(li: u32, i: u32) -> u32 { return (li + 256u * i) / TK; }
fn w_k(li: u32, i: u32) -> u32 { return (li + 256u * i) % TK; }
fn load_w(wbase: u32, n0: u32, k0: u32, li: u32) -> array<f32, 8> {
  var v: array<f32, 8>;
  for (var i = 0u; i < 8u; i++) {
    let wr = w_row(wbase, n0, w_col(li, i));
    let gk = k0 + w_k(li, i);
    v[i] = select(0.0, wload(wr.x * p.K + gk), wr.y != 0u && gk < p.K);
  }
  return v;
}
#endif

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u) {
  let n0 = wid.x * select(TN, TN / 2u, p.glu != 0u); // first output
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
    var r = NONE;
    if (tl.y + li < tl.z) {
      let q = min(route[p.off_ent + tl.y + li], p.np - 1u);
      r = select(q / p.k, q, p.x_pair != 0u);
    }
    rowx[li] = r;
  }
  workgroupBarrier();
  let wbase = (e - p.e_base) * p.rows_w;
  let tx = li % 16u; // column direction
  let ty = li / 16u; // pair direction
  // the 4 x 8 sums in named registers (s[2i + h]: pair ty * 4 + i, column half h; see store_pair)
  var s0 = vec4<f32>(0.0);
  var s1 = vec4<f32>(0.0);
  var s2 = vec4<f32>(0.0);
  var s3 = vec4<f32>(0.0);
  var s4 = vec4<f32>(0.0);
  var s5 = vec4<f32>(0.0);
  var s6 = vec4<f32>(0.0);
  var s7 = vec4<f32>(0.0);
  var px: array<f32, 4>; // X elements li + 256 i of the tile
  var pw = load_w(wbase, n0, 0u, li);
  for (var i = 0u; i < 4u; i++) { px[i] = load_x(0u, li + 256u * i); }
  for (var k0 = 0u; k0 < p.K; k0 += TK) {
    for (var i = 0u; i < 4u; i++) {
      let l = li + 256u * i;
      xs[(l % TK) * ROW4 + (l / TK) / 4u][(l / TK) % 4u] = px[i];
    }
    for (var i = 0u; i < 8u; i++) {
      let c = w_col(li, i);
      ws[w_k(li, i) * ROW4 + c / 4u][c % 4u] = pw[i];
    }
    workgroupBarrier();
    if (k0 + TK < p.K) {
      for (var i = 0u; i < 4u; i++) { px[i] = load_x(k0 + TK, li + 256u * i); }
      pw = load_w(wbase, n0, k0 + TK, li);
    }
    for (var kk = 0u; kk < TK; kk++) {
      let r = kk * ROW4;
      let b0 = ws[r + tx];
      let b1 = ws[r + 16u + tx];
      let a = xs[r + ty];
      s0 += a.x * b0;
      s1 += a.x * b1;
      s2 += a.y * b0;
      s3 += a.y * b1;
      s4 += a.z * b0;
      s5 += a.z * b1;
      s6 += a.w * b0;
      s7 += a.w * b1;
    }
    workgroupBarrier();
  }
  store_pair(tl, n0, tx, ty * 4u, s0, s1);
  store_pair(tl, n0, tx, ty * 4u + 1u, s2, s3);
  store_pair(tl, n0, tx, ty * 4u + 2u, s4, s5);
  store_pair(tl, n0, tx, ty * 4u + 3u, s6, s7);
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
