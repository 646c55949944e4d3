// Integer-dot decode GEMV for the fast precision (op_gemv_q8): one to eight tokens against a block-quantized
// weight in its own storage,
//   y[t][n_off + n] (+)= sum_k W[n, k] * x[t][k] (+ bias[n_off + n]),
// with x quantized beforehand to int8 blocks of 32 (kernels/quantize_q8.wgsl, variant row, which also applies the
// projection's RMSNorm: x [NT][K/4] words, (d_x, d_x * sum x_q) a block), so that a block contributes
//   d_x * s * dot(x_q, w_q) + c * (d_x * sum x_q)        (W = s * w_q + c over the block; lib/weight_int8.wgsli)
// with dot(x_q, w_q) an exact i32 of eight dot4I8Packed (Q6_K: two halves, each its own scale). GLU (glu_half:
// rows n and n + glu_half are gate and up, y[n] = act(gate) * up), the residual add (accumulate) and the bias ride
// in the epilogue, as in kernels/gemv.wgsl.
//
// q4 (q4gsw, and GGUF Q4_0 converted to it) is read without widening: a nibble word (elements 8j..8j+7, element
// 8j + 2i in the low nibble of byte i) gives its even elements by one mask and its odd ones by a shift and a mask,
// bytes 0..15 that dot4I8Packed reads as non-negative int8, dotted with x's words stored evens first (the
// quantizer's perm option); the -8 of the format is -8 * (d_x * sum x_q). Four instructions and two packed dots for
// eight weights, where the f32 GEMV spends about thirty.
//
// Threads: a workgroup of TK * TR threads owns TR * R rows; the TK lanes of a thread-row take the row's blocks of
// 32 in turn (lane kt: blocks kt, kt + TK, ...; a subgroup's loads of one row are contiguous). A lane loads its
// block's x of every token once, then for each of its R rows (2R with GLU) the block's weights once, dotted with
// every token's x: R * NT sums (RR * NT <= 32). Rows past the end are read clamped to the last row and dropped.
// Variant "_sg" reduces with subgroupAdd (SGS dividing TK; one subgroup a thread-row needs no workgroup memory),
// the plain one through workgroup memory (TK a power of two, TK * TR <= 64).
//
// Variant "_wq" quantizes the activations itself instead (x [NT][K] f32 and the norm's weight bound where the
// others bind x_q and its factors): each workgroup normalizes and quantizes all of them into workgroup memory (WQB
// blocks, 40 bytes each) before its rows, as kernels/quantize_q8.wgsl's row variant does (lib/quant_int8.wgsli),
// which costs a few microseconds of arithmetic spread over the GPU instead of a dependent dispatch.
//
// Variant "_moe" is the experts' gate/up of mixture-of-experts decode in the fast precision (op_gemv_q8_experts, as
// kernels/gemv.wgsl's "_moe" is the exact one): one token a workgroup row, workgroup row y pair q of np routed
// (token, expert) pairs, its expert e = route[q] (ids [T][k], read at binding 6 before the scales), its rows expert
// e's from row (e - e_base) rows_w of this piece of the stacked weight [E][rows_w][K], its x row q / k of x_q [T]
// (x_pair 0) or q of [np] (x_pair 1); y [np][n_out], bias [E][rows_w], the GLU by lib/glu_act.wgsli (act 2: gpt-oss's
// clamped SwiGLU with alpha and limit). A pair whose expert lies in another piece writes nothing.
//
// Variant "_moeg" is the same over groups of a batched step's pairs (op_moe_linear_q8's OP_MOE_GROUPS): workgroup
// row y reads group y of the lists' table (kernels/moe_lists.wgsl with groups of NT pairs of one expert; binding 6
// the lists, rows past their group count exit), its expert's weights once for its up to NT pairs, each pair's x row
// and output row as "_moe" has them (rows past the group's pairs repeat its last and write nothing).
//! axis q4: WQ4P=1 | q8: WQ8=1 | q4_1: WBLK=1 WQ4_1=1 | q5_0: WBLK=1 WQ5_0=1 | q5_1: WBLK=1 WQ5_1=1 | q4k: WBLK=1 WQ4_K=1 | q5k: WBLK=1 WQ5_K=1 | q6k: WBLK=1 WQ6_K=1 | iq4nl: WBLK=1 WIQ4_NL=1 | iq4xs: WBLK=1 WIQ4_XS=1 | mxfp4: WBLK=1 WMXFP4=1
//! axis -: SG=0 | _sg: SG=1 requires=subgroups
//! axis -: WQ=0 MOE=0 | _wq: WQ=1 MOE=0 | _moe: WQ=0 MOE=1 | _moeg: WQ=0 MOE=1 MG=1
// the fields from k to limit are "_moe"'s (kernels/gemv.wgsl's of the same names), the lists' word offsets "_moeg"'s
struct Params { N: u32, K: u32, has_bias: u32, accumulate: u32, glu_half: u32, act: u32, n_off: u32, y_stride: u32,
                has_norm: u32, eps: f32, w_offset: f32, k: u32, x_pair: u32, rows_w: u32, e_base: u32, e_count: u32,
                E: u32, alpha: f32, limit: f32, off_off: u32, off_ent: u32, off_tile: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
#if WQ
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;      // [NT][K]
@group(0) @binding(2) var<storage, read> norm_w: array<vec4<f32>>; // [K] (has_norm)
override WQB: u32 = 128u; // NT * K / 32: the blocks of every token
override WQW: u32 = 256u; // 2 * WQB
var<workgroup> wxq: array<vec4<u32>, WQW>; // [NT][K/16]: x_q as the others bind it
var<workgroup> wxf: array<vec2<f32>, WQB>; // [NT][K/32]: d_x, d_x * sum x_q
var<workgroup> winv: array<f32, 8>;        // [NT]: 1 / rms(x)
#include "lib/quant_int8.wgsli"
#else
@group(0) @binding(1) var<storage, read> xq: array<vec4<u32>>;  // [NT][K/16]
@group(0) @binding(2) var<storage, read> xds: array<vec2<f32>>; // [NT][K/32]: d_x, d_x * sum x_q
#endif
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
// the pairs' experts, ids [T][k] ("_moeg": the lists, op_moe_lists' words); the scales after it
@group(0) @binding(6) var<storage, read> route: array<u32>;
#include "lib/glu_act.wgsli"
#endif
#if MG
var<workgroup> live: u32; // this group exists and its expert is in this piece
#endif

override R: u32 = 4u;    // rows a thread-row
override TK: u32 = 32u;  // lanes along K in a thread-row
override TR: u32 = 4u;   // thread-rows a workgroup
override SGS: u32 = 32u; // subgroup size (sg variant)
override NT: u32 = 1u;   // tokens (1..8)
override GLU: bool = false;
override RR: u32 = select(R, 2u * R, GLU);
override WG: u32 = TK * TR;
#if SG
var<workgroup> red: array<f32, 1024>; // [WG / SGS subgroups, at most 32][32 sums]
#else
var<workgroup> red: array<f32, 2048>; // [32 sums][WG <= 64]
#endif

var<private> xw: array<vec4<u32>, 16>; // [NT][2]: this lane's block of each token's x_q
var<private> xf: array<vec2<f32>, 8>;  // [NT]: its (d_x, d_x * sum x_q)

#if WQ4P
// q4gsw: nibbles [N][K/8] (element k at bits 4 (k % 8) of word k / 8), f16 scales [N][K/G], value (q - 8) * scale
@group(0) @binding(3) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding({{SBIND}}) var<storage, read> wscale: array<u32>;
override G: u32 = 32u;
const PERM = true; // x's words evens first
// row n's block kb dotted with each token's x, added to acc[a0 + t]
fn block_dot(n: u32, kb: u32, acc: ptr<function, array<f32, 32>>, a0: u32) {
  let wd = w[n * (p.K / 32u) + kb];
  let lo = wd & vec4<u32>(0x0F0F0F0Fu);
  let hi = (wd >> vec4<u32>(4u)) & vec4<u32>(0x0F0F0F0Fu);
  let g = n * (p.K / G) + (32u * kb) / G;
  let s = unpack2x16float(wscale[g >> 1u])[g & 1u];
  for (var t = 0u; t < NT; t++) {
    let a = xw[2u * t];
    let b = xw[2u * t + 1u];
    let i = dot4I8Packed(lo.x, a.x) + dot4I8Packed(hi.x, a.y) + dot4I8Packed(lo.y, a.z) + dot4I8Packed(hi.y, a.w) +
            dot4I8Packed(lo.z, b.x) + dot4I8Packed(hi.z, b.y) + dot4I8Packed(lo.w, b.z) + dot4I8Packed(hi.w, b.w);
    (*acc)[a0 + t] += s * (xf[t].x * f32(i) - 8.0 * xf[t].y);
  }
}
#else
const PERM = false;
fn dot16(w4: vec4<u32>, x4: vec4<u32>) -> i32 {
  return dot4I8Packed(w4.x, x4.x) + dot4I8Packed(w4.y, x4.y) + dot4I8Packed(w4.z, x4.z) + dot4I8Packed(w4.w, x4.w);
}
fn block_dot(n: u32, kb: u32, acc: ptr<function, array<f32, 32>>, a0: u32) {
  let w0 = wq(n, kb, 0u);
  let w1 = wq(n, kb, 1u);
  let f0 = wfac(n, kb, 0u);
  var f1 = f0;
  if (WHALF) { f1 = wfac(n, kb, 1u); }
  for (var t = 0u; t < NT; t++) {
    let i0 = dot16(w0, xw[2u * t]);
    let i1 = dot16(w1, xw[2u * t + 1u]);
    var v: f32;
    if (WHALF) {
      v = xf[t].x * (f0.x * f32(i0) + f1.x * f32(i1));
    } else {
      v = xf[t].x * f0.x * f32(i0 + i1);
    }
    if (WMIN) { v += f0.y * xf[t].y; }
    (*acc)[a0 + t] += v;
  }
}
#endif

fn act_fn(g: f32) -> f32 {
  if (p.act == 0u) { return g / (1.0 + exp(-g)); }
  let z = 0.7978845608028654 * (g + 0.044715 * g * g * g);
  return g / (1.0 + exp(-2.0 * z));
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u
#if SG
        , @builtin(subgroup_invocation_id) lane: u32
#endif
        ) {
  let kt = li % TK;
  let rt = li / TK;
  let n_out = select(p.N, p.glu_half, GLU);
  let nkb = p.K / 32u;
#if MG
  // group g's expert, its first entry in the lists and its pairs (up to NT), their x rows
  let g = wid.y;
  if (li == 0u) {
    var on = 0u;
    if (g < route[0]) {
      let ge = min(route[p.off_tile + 2u * g], p.E - 1u);
      on = select(0u, 1u, ge >= p.e_base && ge - p.e_base < p.e_count);
    }
    live = on;
  }
  if (workgroupUniformLoad(&live) == 0u) { return; }
  let e = min(route[p.off_tile + 2u * g], p.E - 1u);
  let rbase = (e - p.e_base) * p.rows_w;
  let first = route[p.off_tile + 2u * g + 1u];
  let cnt = min(NT, route[p.off_off + e + 1u] - first);
  var pq: array<u32, 8>; // [NT] the group's pairs, the last repeated past cnt
  var xr: array<u32, 8>; // [NT] their x rows
  for (var t = 0u; t < NT; t++) {
    pq[t] = route[p.off_ent + first + min(t, cnt - 1u)];
    xr[t] = select(pq[t] / p.k, pq[t], p.x_pair != 0u);
  }
  let nb = wid.x * (TR * R) + rt * R; // first row of this thread-row
#else
#if MOE
  // pair q's expert, its first row in this piece, its x row
  let q = wid.y;
  let e = min(route[q], p.E - 1u);
  let inpart = e >= p.e_base && e - p.e_base < p.e_count;
  let rbase = select(0u, (e - p.e_base) * p.rows_w, inpart);
  let xt = select(q / p.k, q, p.x_pair != 0u);
  let nb = wid.x * (TR * R) + rt * R; // first row of this thread-row
#else
  let rbase = 0u;
  let xt = 0u;
  let nb = (wid.x + wid.y * nwg.x) * (TR * R) + rt * R; // first row of this thread-row
#endif
#endif
  var acc: array<f32, 32>; // [RR][NT]
  for (var r = 0u; r < RR * NT; r++) { acc[r] = 0.0; }
  var rowb: array<u32, 32>; // the row of each sum
  for (var r = 0u; r < RR; r++) {
    var n = min(nb + (r % R), n_out - 1u);
    if (GLU && r >= R) { n += p.glu_half; }
    rowb[r] = rbase + n;
  }
#if WQ
  // every token's x into workgroup memory as int8 blocks: 1 / rms per token (has_norm), then a block a thread
  let nv = p.K / 4u;
  if (p.has_norm != 0u) {
    var ssl: array<f32, 8>; // [NT]
    for (var t = 0u; t < NT; t++) {
      ssl[t] = 0.0;
      for (var i = li; i < nv; i += WG) {
        let v = x[t * nv + i];
        ssl[t] += dot(v, v);
      }
    }
#if SG
    for (var t = 0u; t < NT; t++) {
      let a = subgroupAdd(ssl[t]);
      if (lane == 0u) { red[(li / SGS) * NT + t] = a; }
    }
    workgroupBarrier();
    if (li < NT) {
      var ss = 0.0;
      for (var g = 0u; g < WG / SGS; g++) { ss += red[g * NT + li]; }
      winv[li] = inverseSqrt(ss / f32(p.K) + p.eps);
    }
#else
    for (var t = 0u; t < NT; t++) { red[t * WG + li] = ssl[t]; }
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
      if (li < k) {
        for (var t = 0u; t < NT; t++) { red[t * WG + li] += red[t * WG + li + k]; }
      }
      workgroupBarrier();
    }
    if (li < NT) { winv[li] = inverseSqrt(red[li * WG] / f32(p.K) + p.eps); }
#endif
    workgroupBarrier();
  }
  for (var i = li; i < NT * nkb; i += WG) {
    let t = i / nkb;
    let b = i % nkb;
    var v: array<vec4<f32>, 8>;
    for (var j = 0u; j < 8u; j++) {
      var e = x[t * nv + 8u * b + j];
      if (p.has_norm != 0u) { e = e * winv[t] * (norm_w[8u * b + j] + vec4<f32>(p.w_offset)); }
      v[j] = e;
    }
    var q: array<vec2<u32>, 4>;
    wxf[i] = quant_block(&v, PERM, &q);
    wxq[2u * i] = vec4<u32>(q[0], q[1]);
    wxq[2u * i + 1u] = vec4<u32>(q[2], q[3]);
  }
  workgroupBarrier();
#endif
  for (var kb = kt; kb < nkb; kb += TK) {
    for (var t = 0u; t < NT; t++) {
#if WQ
      xw[2u * t] = wxq[2u * (t * nkb + kb)];
      xw[2u * t + 1u] = wxq[2u * (t * nkb + kb) + 1u];
      xf[t] = wxf[t * nkb + kb];
#else
#if MG
      let xrow = xr[t];
#else
      let xrow = xt + t;
#endif
      xw[2u * t] = xq[2u * (xrow * nkb + kb)];
      xw[2u * t + 1u] = xq[2u * (xrow * nkb + kb) + 1u];
      xf[t] = xds[xrow * nkb + kb];
#endif
    }
    for (var r = 0u; r < RR; r++) { block_dot(rowb[r], kb, &acc, r * NT); }
  }
  // reduce the RR * NT sums over the TK lanes of the thread-row; lane kt < R * NT ends with row nb + kt % R of
  // token kt / R
  let r0 = kt % R;
  let tt = kt / R;
  var mine = 0.0;
  var mine_up = 0.0;
#if SG
  if (TK == SGS) {
    for (var r = 0u; r < RR; r++) {
      for (var t = 0u; t < NT; t++) {
        let a = subgroupAdd(acc[r * NT + t]);
        if (kt == t * R + r % R) {
          if (r < R) { mine = a; } else { mine_up = a; }
        }
      }
    }
  } else {
    let sgid = li / SGS;
    let spr = TK / SGS; // subgroups a thread-row
    for (var r = 0u; r < RR * NT; r++) {
      let a = subgroupAdd(acc[r]);
      if (lane == 0u) { red[sgid * 32u + r] = a; }
    }
    workgroupBarrier();
    if (kt < R * NT) {
      for (var s = 0u; s < spr; s++) {
        let b = (rt * spr + s) * 32u;
        mine += red[b + r0 * NT + tt];
        if (GLU) { mine_up += red[b + (R + r0) * NT + tt]; }
      }
    }
  }
#else
  for (var r = 0u; r < RR * NT; r++) { red[r * WG + li] = acc[r]; }
  workgroupBarrier();
  for (var k = TK / 2u; k > 0u; k >>= 1u) {
    if (kt < k) {
      for (var r = 0u; r < RR * NT; r++) { red[r * WG + li] += red[r * WG + li + k]; }
    }
    workgroupBarrier();
  }
  if (kt < R * NT) {
    mine = red[(r0 * NT + tt) * WG + rt * TK];
    if (GLU) { mine_up = red[((R + r0) * NT + tt) * WG + rt * TK]; }
  }
#endif
  let n = nb + r0;
#if MOE
#if MG
  if (kt < R * NT && n < n_out && tt < cnt) {
    let o = pq[tt] * n_out + n;
#else
  if (kt < R * NT && n < n_out && inpart) {
    let o = q * n_out + n;
#endif
    let bo = e * p.rows_w + n; // the gate row's bias (up: glu_half further)
    var v = mine;
    if (GLU) {
      var u = mine_up;
      if (p.has_bias != 0u) { v += bias[bo]; u += bias[bo + p.glu_half]; }
      v = glu_act(p.act, v, u, p.alpha, p.limit);
    } else if (p.has_bias != 0u) {
      v += bias[bo];
    }
    if (p.accumulate != 0u) { v += y[o]; }
    y[o] = v;
  }
#else
  if (kt < R * NT && n < n_out) {
    let o = tt * p.y_stride + p.n_off + n;
    var v = mine;
    if (GLU) {
      var u = mine_up;
      if (p.has_bias != 0u) { v += bias[n]; u += bias[n + p.glu_half]; }
      v = act_fn(v) * u;
    } else if (p.has_bias != 0u) {
      v += bias[p.n_off + n];
    }
    if (p.accumulate != 0u) { v += y[o]; }
    y[o] = v;
  }
#endif
}
