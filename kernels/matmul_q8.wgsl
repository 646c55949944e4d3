// Integer-dot GEMM for prefill in the fast precision (op_matmul_q8): Y[m, n] = sum_k X[m, k] * W[n, k] (+ bias[n])
// with X as int8 blocks of 32 (kernels/quantize_q8.wgsl: x_q, d_x and d_x * sum x_q a block) and W a
// block-quantized weight in its own storage, read as int8 w_q and factors (s, c) a half block
// (lib/weight_int8.wgsli), so that a block of 32 contributes
//   d_x * s * dot(x_q, w_q) + c * (d_x * sum x_q)
// where dot(x_q, w_q) is an exact i32 from eight dot4I8Packed (four a half for Q6_K, whose two halves have their
// own scale: WHALF). Y [M][N] f32, rows y_stride apart, columns from n_off (a weight in row parts runs a dispatch a
// part). K a multiple of 32 (of 256 for the K-quants, whose rows are whole blocks); any M and N.
//
// A workgroup of 256 threads (16 x 16) owns TM = 16 RM rows (m) by 128 columns (n) and walks K a block a step: it
// stages X's TM x 8 words and W's 128 x 8 words in workgroup memory word-major (a word's rows, then a vec4 of
// padding, so the words a thread stores and the vec4s it reads fall in different banks), and the blocks' factors;
// the next step's words are fetched into registers while this one is multiplied. Thread (tx, ty) keeps the RM x 8
// outputs of rows 4 ty.. (and 64 + 4 ty.. when RM = 8; rows RM ty.. when RM is 1 or 2, the 16- and 32-row tiles
// of batched decode) and columns 4 tx.., 64 + 4 tx..: per word it reads RM / 4 vec4s of X (RM words when RM < 4)
// and two of W for 8 RM dot4I8Packed into i32 sums, which become f32 once a block (or a half).
//
// Split K (k_split > 1, the small-M GEMM of batched decode, op_gemv_fast past 8 tokens): workgroup z of the grid's
// third dimension walks blocks [z nkb / k_split, (z + 1) nkb / k_split) only and writes its raw sums (no bias) to
// y[z part_stride + m y_stride + n_off + n]; kernels/matmul_q8_sum.wgsl adds the slices up with the epilogue.
//
// The experts' tiles of prefill (variants "_moe", MOE: op_moe_linear_q8, src/ops/op_moe.c; the f32 twin is
// kernels/moe_linear.wgsl "_tile", whose Params and lists this reads): the rows are op_moe_lists' pairs, a tile of
// TM = 64 (RM 4) pairs of one expert e a workgroup (workgroup y: tile y of the tile table at route[off_tile]; those
// past route[0] exit), each pair's x row gathered through the lists (x_pair 0: its token's row of xq [T][K/4], 1: its
// own of xq [T * k][K/4]); W [E][rows_w][K] is expert e's rows from row (e - e_base) rows_w (a piece of experts
// e_base .. e_base + e_count - 1; tiles of other experts exit). Columns: 128 outputs n, or with glu 64 outputs' gate
// rows then their up rows, so each thread holds the gate and up sums of its outputs; out y[q][n] for pair q,
// bias [E][rows_w] and the GLU applied by lib/moe_tile_out.wgsli (kernels/moe_linear.wgsl shares it).
//! variant q4: WQ4=1
//! variant q8: WQ8=1
//! variant q4_1: WBLK=1 WQ4_1=1
//! variant q5_0: WBLK=1 WQ5_0=1
//! variant q5_1: WBLK=1 WQ5_1=1
//! variant q4k: WBLK=1 WQ4_K=1
//! variant q5k: WBLK=1 WQ5_K=1
//! variant q6k: WBLK=1 WQ6_K=1
//! variant iq4nl: WBLK=1 WIQ4_NL=1
//! variant iq4xs: WBLK=1 WIQ4_XS=1
//! variant mxfp4: WBLK=1 WMXFP4=1
//! variant q4_moe: WQ4=1 MOE=1
//! variant q8_moe: WQ8=1 MOE=1
//! variant q4_1_moe: WBLK=1 WQ4_1=1 MOE=1
//! variant q5_0_moe: WBLK=1 WQ5_0=1 MOE=1
//! variant q5_1_moe: WBLK=1 WQ5_1=1 MOE=1
//! variant q4k_moe: WBLK=1 WQ4_K=1 MOE=1
//! variant q5k_moe: WBLK=1 WQ5_K=1 MOE=1
//! variant q6k_moe: WBLK=1 WQ6_K=1 MOE=1
//! variant iq4nl_moe: WBLK=1 WIQ4_NL=1 MOE=1
//! variant iq4xs_moe: WBLK=1 WIQ4_XS=1 MOE=1
//! variant mxfp4_moe: WBLK=1 WMXFP4=1 MOE=1
// M: X's rows (MOE: xq's, T or T * k); the fields from k on are MOE's (kernels/moe_linear.wgsl's of the same names)
struct Params {
  M: u32, N: u32, K: u32, has_bias: u32, y_stride: u32, n_off: u32, k_split: u32, part_stride: u32,
  k: u32, np: u32, E: u32, rows_w: u32, glu: u32, act: u32, x_pair: u32, e_base: u32,
  e_count: u32, off_off: u32, off_ent: u32, off_tile: u32, alpha: f32, limit: f32, _p0: u32, _p1: u32
};
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xq: array<u32>;       // [M][K/4]
@group(0) @binding(2) var<storage, read> xds: array<vec2<f32>>; // [M][K/32]: d_x, d_x * sum x_q
#define WBIND 3
#if MOE
#define SBIND 7
#else
#define SBIND 6
#endif
#include "lib/weight_int8.wgsli"
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
#if MOE
@group(0) @binding(6) var<storage, read> route: array<u32>; // op_moe_lists' lists (the scales after it)
#include "lib/glu_act.wgsli"
#endif

override RM: u32 = 4u;   // rows a thread: 1, 2, 4 or 8 (16-, 32-, 64-, 128-row tiles)
override TM: u32 = 16u * RM;
override XROW: u32 = 4u * RM + 1u; // vec4s a word of the X tile: TM rows + one of padding
// how a block's i32 sums become f32: false, a conversion instruction; true, adding them to the bits of 1.5 * 2^23
// and subtracting that (exact for |sum| < 2^22: a block's is at most 32 * 127 * 127), integer and float adds
override CVT_ADD: bool = false;
const WROW = 33u; // vec4s a word of the W tile: 128 columns + one of padding
var<workgroup> xs: array<vec4<u32>, 264>; // [8 words][XROW]: word kw of row r at xs[kw * XROW + r / 4][r % 4]
var<workgroup> ws: array<vec4<u32>, 264>; // [8 words][WROW]: word kw of column c at ws[kw * WROW + c / 4][c % 4]
var<workgroup> xf: array<vec2<f32>, 128>; // the rows' d_x, d_x * sum x_q of the block
var<workgroup> wsc: array<vec4<f32>, 64>; // [2 halves][32]: the columns' s (column c at [h * 32 + c / 4][c % 4])
var<workgroup> wmn: array<vec4<f32>, 32>; // [32]: the columns' c

fn to_f32(v: vec4<i32>) -> vec4<f32> {
  if (CVT_ADD) { return bitcast<vec4<f32>>(v + vec4<i32>(0x4B400000)) - vec4<f32>(12582912.0); }
  return vec4<f32>(v);
}

// the tile row of thread row ty's i-th row
fn tile_row(ty: u32, i: u32) -> u32 {
  if (RM < 4u) { return RM * ty + i; }
  return 64u * (i / 4u) + 4u * ty + i % 4u;
}

#if MOE
const NONE = 0xffffffffu;
var<workgroup> rowx: array<u32, 64>; // the xq row of each of the tile's pairs (NONE past its end)
var<workgroup> tile: vec4<u32>;      // expert, first entry, entries end, valid

// thread li's X word i of block kb: the row of tile pair li / 8 + 32 i, word li % 8 (0 past the tile's pairs)
fn load_x(m0: u32, kb: u32, li: u32, i: u32) -> u32 {
  let r = rowx[li / 8u + 32u * i];
  return select(0u, xq[min(r, p.M - 1u) * (p.K / 4u) + 8u * kb + li % 8u], r != NONE);
}
// the factors (d_x, d_x * sum x_q) of block kb of tile pair li
fn load_xf(m0: u32, kb: u32, li: u32) -> vec2<f32> {
  let r = rowx[li];
  return select(vec2<f32>(0.0), xds[min(r, p.M - 1u) * (p.K / 32u) + kb], r != NONE);
}
#include "lib/moe_tile_out.wgsli"
#else
// thread li's X word i of block kb: row li / 8 + 32 i, word li % 8 (0 past the last row)
fn load_x(m0: u32, kb: u32, li: u32, i: u32) -> u32 {
  let r = m0 + li / 8u + 32u * i;
  return select(0u, xq[min(r, p.M - 1u) * (p.K / 4u) + 8u * kb + li % 8u], r < p.M);
}
#endif

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u) {
#if MOE
  let m0 = 0u;
  let n0 = wid.x * select(128u, 64u, p.glu != 0u); // first output
  if (li == 0u) {
    var tl = vec4<u32>(0u, 0u, 0u, 0u);
    if (wid.y < route[0]) {
      let e = min(route[p.off_tile + 2u * wid.y], p.E - 1u);
      let r0 = route[p.off_tile + 2u * wid.y + 1u];
      tl = vec4<u32>(e, r0, min(r0 + TM, route[p.off_off + e + 1u]), 1u);
    }
    tile = tl;
  }
  let tl = workgroupUniformLoad(&tile);
  if (tl.w == 0u || n0 >= p.N || tl.x < p.e_base || tl.x - p.e_base >= p.e_count) { return; }
  if (li < TM) {
    var r = NONE;
    if (tl.y + li < tl.z) {
      let q = min(route[p.off_ent + tl.y + li], p.np - 1u);
      r = select(q / p.k, q, p.x_pair != 0u);
    }
    rowx[li] = r;
  }
  workgroupBarrier();
#else
  let m0 = wid.y * TM;
  let n0 = wid.x * 128u;
#endif
  let tx = li % 16u; // n direction
  let ty = li / 16u; // m direction: rows 4 ty.. (and 64 + 4 ty.. when RM = 8)
  let wn = li / 2u;  // the W column this thread stages, and its half block
  let wh = li % 2u;
#if MOE
  let wr = w_row((tl.x - p.e_base) * p.rows_w, n0, wn); // columns past the outputs read a row of the expert, factors 0
  let wrow = wr.x;
  let wlive = wr.y != 0u;
#else
  let wrow = min(n0 + wn, p.N - 1u); // rows past the end read the last one, their factors 0
  let wlive = n0 + wn < p.N;
#endif
  var acc: array<vec4<f32>, 16>; // [RM][2 column halves]
  for (var i = 0u; i < 2u * RM; i++) { acc[i] = vec4<f32>(0.0); }
  let nkb = p.K / 32u;
  let ks = max(p.k_split, 1u);
  let kb0 = wid.z * nkb / ks;
  let kb1 = (wid.z + 1u) * nkb / ks;
  let XI = (RM + 1u) / 2u; // X words a thread stages: rows li / 8 + 32 i below TM
  var px: array<u32, 4>;
  for (var i = 0u; i < XI; i++) { px[i] = load_x(m0, kb0, li, i); }
  var pw = wq(wrow, kb0, wh);
  for (var kb = kb0; kb < kb1; kb++) {
    // stage this block: X words, W words, the factors
    let xr = li / 8u;
    let xw = li % 8u;
    for (var i = 0u; i < XI; i++) {
      if (xr + 32u * i < TM) { xs[xw * XROW + 8u * i + xr / 4u][xr % 4u] = px[i]; }
    }
    for (var j = 0u; j < 4u; j++) { ws[(4u * wh + j) * WROW + wn / 4u][wn % 4u] = pw[j]; }
    if (li < TM) {
#if MOE
      xf[li] = load_xf(m0, kb, li);
#else
      xf[li] = select(vec2<f32>(0.0), xds[min(m0 + li, p.M - 1u) * nkb + kb], m0 + li < p.M);
#endif
    }
    if (WHALF || wh == 0u) {
      let f = select(vec2<f32>(0.0), wfac(wrow, kb, wh), wlive);
      wsc[wh * 32u + wn / 4u][wn % 4u] = f.x;
      if (WMIN) { wmn[wn / 4u][wn % 4u] = f.y; }
    }
    workgroupBarrier();
    if (kb + 1u < kb1) {
      for (var i = 0u; i < XI; i++) { px[i] = load_x(m0, kb + 1u, li, i); }
      pw = wq(wrow, kb + 1u, wh);
    }
    var si: array<vec4<i32>, 16>; // [RM][2]
    for (var i = 0u; i < 2u * RM; i++) { si[i] = vec4<i32>(0); }
    for (var kw = 0u; kw < 8u; kw++) {
      let b0 = ws[kw * WROW + tx];
      let b1 = ws[kw * WROW + 16u + tx];
      if (RM < 4u) { // rows RM ty..: a word each
        for (var i = 0u; i < RM; i++) {
          let r = RM * ty + i;
          let a = xs[kw * XROW + r / 4u][r % 4u];
          si[2u * i] += vec4<i32>(dot4I8Packed(a, b0.x), dot4I8Packed(a, b0.y), dot4I8Packed(a, b0.z),
                                  dot4I8Packed(a, b0.w));
          si[2u * i + 1u] += vec4<i32>(dot4I8Packed(a, b1.x), dot4I8Packed(a, b1.y), dot4I8Packed(a, b1.z),
                                       dot4I8Packed(a, b1.w));
        }
      }
      for (var q = 0u; q < RM / 4u; q++) {
        let a = xs[kw * XROW + 16u * q + ty];
        for (var i = 0u; i < 4u; i++) {
          let o = 2u * (4u * q + i);
          si[o] += vec4<i32>(dot4I8Packed(a[i], b0.x), dot4I8Packed(a[i], b0.y), dot4I8Packed(a[i], b0.z),
                             dot4I8Packed(a[i], b0.w));
          si[o + 1u] += vec4<i32>(dot4I8Packed(a[i], b1.x), dot4I8Packed(a[i], b1.y), dot4I8Packed(a[i], b1.z),
                                  dot4I8Packed(a[i], b1.w));
        }
      }
      if (WHALF && kw == 3u) { // the first half's scales, then the second's
        for (var i = 0u; i < RM; i++) {
          let d = xf[tile_row(ty, i)].x;
          acc[2u * i] += to_f32(si[2u * i]) * (d * wsc[tx]);
          acc[2u * i + 1u] += to_f32(si[2u * i + 1u]) * (d * wsc[16u + tx]);
          si[2u * i] = vec4<i32>(0);
          si[2u * i + 1u] = vec4<i32>(0);
        }
      }
    }
    let sh = select(0u, 32u, WHALF);
    for (var i = 0u; i < RM; i++) {
      let f = xf[tile_row(ty, i)];
      acc[2u * i] += to_f32(si[2u * i]) * (f.x * wsc[sh + tx]);
      acc[2u * i + 1u] += to_f32(si[2u * i + 1u]) * (f.x * wsc[sh + 16u + tx]);
      if (WMIN) {
        acc[2u * i] += f.y * wmn[tx];
        acc[2u * i + 1u] += f.y * wmn[16u + tx];
      }
    }
    workgroupBarrier();
  }
#if MOE
  // RM 4 (op_matmul_q8_experts): constant indices only (lib/moe_tile_out.wgsli, store_pair)
  store_pair(tl, n0, tx, tile_row(ty, 0u), acc[0], acc[1]);
  store_pair(tl, n0, tx, tile_row(ty, 1u), acc[2], acc[3]);
  store_pair(tl, n0, tx, tile_row(ty, 2u), acc[4], acc[5]);
  store_pair(tl, n0, tx, tile_row(ty, 3u), acc[6], acc[7]);
#else
  let yz = select(0u, wid.z * p.part_stride, ks > 1u); // a K slice's partial sums
  for (var i = 0u; i < RM; i++) {
    let gm = m0 + tile_row(ty, i);
    if (gm >= p.M) { continue; }
    for (var jh = 0u; jh < 2u; jh++) {
      for (var j = 0u; j < 4u; j++) {
        let gn = n0 + 64u * jh + 4u * tx + j;
        if (gn >= p.N) { continue; }
        var v = acc[2u * i + jh][j];
        if (p.has_bias != 0u && ks == 1u) { v += bias[p.n_off + gn]; }
        y[yz + gm * p.y_stride + p.n_off + gn] = v;
      }
    }
  }
#endif
}
