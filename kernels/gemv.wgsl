// Decode GEMV (one token), tuned for bandwidth and fused with its neighbours, for the weight storages decode
// streams most: q4gsw, q8 (GGUF Q8_0), ggml's Q4_K, Q5_K and Q6_K blocks (the K-quant mixes), MXFP4 (gpt-oss's
// experts) and f32 (the MoE routers, which files keep in f32; dense f32 layers take kernels/matvec.wgsl):
//   y[n_off + n] (+)= s * sum_k W[n, k] * x'[k] (+ bias[n_off + n]),  x' = x * (norm_w + w_offset),
//   s = 1/rms(x) when has_norm
// so the RMSNorm before a projection, the residual add after it (accumulate) and the gated activation of the
// MLP (GLU: rows n and n + glu_half are gate and up, y[n] = act(gate) * up) need no dispatch of their own.
// n_off places the rows of one part of a weight kept in parts (each part its own dispatch).
//
// Threads: a workgroup of TK * TR threads owns TR * R rows. The TK threads of a thread-row split each row into
// steps that lie side by side in memory (q4gsw and MXFP4: a u32 word, 8 nibbles; q8: 8 bytes; Q4_K / Q5_K: 16
// bytes of quants, 32 elements; Q6_K: 16 elements), so a subgroup's loads are contiguous. Each lane keeps R row sums
// (2R with GLU: gate and up), so its slice of x (XV vec4s a step) is loaded once for R rows, and U steps are
// unrolled so that U * R loads are in flight. Rows past the end are read clamped to the last row and dropped,
// so the loads have no branch around them. (A q4gsw lane reading a whole 16-byte group, 4 words, a step
// measured no faster on the H200; PERF.md.)
//
// Quants are widened without an int-to-float conversion (a quarter-rate instruction on GPUs, and what limited
// an earlier kernel): a b-bit q placed in the top of the mantissa of 1.0 reads as f = 1 + q / 2^b, so
//   sum_k q_k x_k = 2^b * (sum_k f_k x_k - sum_k x_k),
// where the sums of x over a step are computed once for all R rows (xa). That is a shift and a mask a weight.
//
// A row's step is loaded and widened once (decode: its floats in dw, its scale factors in dc) and then dotted
// with the x of each token (apply). Variants "_mt" take NT tokens (2..8) at once: x [NT][K], y rows y_stride
// apart, so each weight is read and decoded once for all of them (batched decode of several sessions). Each lane
// then keeps R * NT sums (the op picks R and U so the sums and the x slots fit the arrays below).
//
// Variant "_sg" reduces with subgroupAdd (fixed subgroup size SGS dividing TK, checked by the op's plan); when
// TK == SGS a thread-row is one subgroup and needs no workgroup memory. The plain variant reduces through
// workgroup memory (TK a power of two, TK * TR <= 128).
//
// Variants "_moe" are the expert GEMV of mixture-of-experts decode (op_gemv_experts): workgroup row y is pair q
// of np routed (token, expert) pairs, its expert e = route[q] (ids [T][k]); its rows are expert e's, starting at
// row (e - e_base) * rows_w of this piece of the stacked weight [E][rows_w][K], its x is row q / k of x [T][K]
// (x_pair 0: gate/up) or row q of x [np][K] (x_pair 1: down), and it writes y [np][n_out], its bias [E][rows_w].
// A pair whose expert lies in another piece (a weight in parts of whole experts) writes nothing. act 2 is
// gpt-oss's clamped SwiGLU: (clamp(u, -limit, limit) + 1) * g' * sigmoid(alpha g'), g' = min(g, limit).
// Variants "_moer" route the pairs themselves (the gate/up of decode, instead of a router dispatch before them):
// each workgroup ranks its token's experts from the router's logits [T][E] (lib/moe_topk.wgsli, as
// kernels/moe_route.wgsl: mode route_mode) and takes its slot q % k; the first workgroup of each token writes the
// token's ids and weights [T][k] for the down projection and the combine.
// Variants "_moec" are the down projection and the combine in one (op_moe_down_combine): workgroup row y is token
// t, and its rows run over the k pairs t * k + j as one row of k * K elements, pair j's expert e = route[q] (ids
// [T][k]) giving the weight rows of its K and x [np][K] row q, scaled by the pair's weight route_w[q] ([T][k]) as it
// is loaded (each step's sums are linear in x), so y [T][n_out] (+)= sum_j route_w[q] * (W[e] . x[q] + bias[e]).
// The weight is one piece holding all E experts.
// (RB, RB1, RB2: the bindings after the scales, where the storage has them)
//! axis q4: WQ4=1 RB=7 RB1=8 RB2=9 | q8: WQ8=1 RB=7 RB1=8 RB2=9 | q4k: WQ4_K=1 WKQ=1 RB=6 RB1=7 RB2=8 | q5k: WQ5_K=1 WKQ=1 RB=6 RB1=7 RB2=8 | q6k: WQ6_K=1 RB=6 RB1=7 RB2=8 | mxfp4: WMXFP4=1 RB=7 RB1=8 RB2=9 | f32: WF32=1 RB=6 RB1=7 RB2=8
//! axis -: SG=0 | _sg: SG=1 requires=subgroups
//! axis -: MT=0 MOE=0 | _mt: MT=1 MOE=0 | _moe: MT=0 MOE=1 | _moer: MT=0 MOE=1 ROUTE=1 | _moec: MT=0 MOE=1 COMBINE=1
// bench_kernels --probe only (dev=1: in wgllm_dev's table, not the library's): q4gsw for one token with a stage
// left out, LEAVE_OUT 1 no nibble decode, 2 no x loads, 3 no scale loads, 4 neither decode nor scales, 5 the
// weight loads alone (src/dev/gemv_probe.c)
//! variant q4_probe: WQ4=1 SG=0 MT=0 PROBE=1 RB=7 dev=1
//! variant q4_sg_probe: WQ4=1 SG=1 MT=0 PROBE=1 RB=7 requires=subgroups dev=1
struct Params { N: u32, K: u32, has_bias: u32, accumulate: u32,
                has_norm: u32, eps: f32, w_offset: f32, glu_half: u32,
                act: u32, n_off: u32, y_stride: u32, k: u32,
                x_pair: u32, rows_w: u32, e_base: u32, e_count: u32,
                E: u32, alpha: f32, limit: f32, route_mode: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> norm_w: array<vec4<f32>>;
#if MOE
#if ROUTE
@group(0) @binding({{RB}}) var<storage, read> logits: array<f32>;
@group(0) @binding({{RB1}}) var<storage, read_write> route: array<u32>;
@group(0) @binding({{RB2}}) var<storage, read_write> route_w: array<f32>;
#else
@group(0) @binding({{RB}}) var<storage, read> route: array<u32>;
#if COMBINE
@group(0) @binding({{RB1}}) var<storage, read> route_w: array<f32>;
#endif
#endif
#endif
override G: u32 = 32u;   // q4gsw group size
override R: u32 = 8u;    // rows per thread-row
override TK: u32 = 128u; // threads along K in a thread-row
override TR: u32 = 1u;   // thread-rows per workgroup
override SGS: u32 = 32u; // subgroup size (sg variant)
override U: u32 = 4u;    // steps unrolled (1..4; XV * U <= 16)
#if PROBE
override LEAVE_OUT: u32 = 0u; // the stage the "_probe" variants leave out (above)
#endif
// GLU and the row count are pipeline constants, so every loop over the sums has a constant trip count and
// the compiler keeps them in registers
override GLU: bool = false;
override RR: u32 = select(R, 2u * R, GLU);
override WG: u32 = TK * TR;
#if ROUTE
override TOPK_WG: u32 = WG;
fn topk_logit(t: u32, e: u32) -> f32 { return logits[t * p.E + e]; }
#include "lib/moe_topk.wgsli"
#endif

#if MT
override NT: u32 = 2u;   // tokens
const NTMAX = 8u;
const XSLOTS = 32u;
#else
const NT = 1u;
const NTMAX = 1u;
const XSLOTS = 16u;
#endif
const MAXR = 32u + NTMAX; // 32 row sums (2 * 16, or R * NT with tokens) + a sum of squares a token
#if SG
var<workgroup> red: array<f32, 32u * MAXR>; // [WG / SGS subgroups, at most 32][MAXR]
#else
var<workgroup> red: array<f32, 128u * MAXR>; // [MAXR][WG <= 128]
#endif

var<private> xs: array<vec4<f32>, XSLOTS>; // [NT][U][XV]: this lane's x (normed) of its unrolled steps
var<private> xa: array<f32, XSLOTS>;       // [NT][U][NA]: sums of x a step's rows share
// one row's step decoded once (decode), then dotted with each token's x (apply): the weights widened to floats
// (XV vec4s) and the step's scale factors
var<private> dw: array<vec4<f32>, 8>;
var<private> dc: vec4<f32>;
var<private> dc2: vec2<f32>;

const ONE = vec4<u32>(0x3F800000u);
fn hsum(v: vec4<f32>) -> f32 { return v.x + v.y + v.z + v.w; }

#if WQ4
// q4gsw: data u32 [N][K/8], nibble of element k at bits 4*(k%8) of word k/8, value (q - 8) * scale[k / G];
// scales f16 [N][K/G]. A step is one word; sum (q - 8) x = 16 * (sum f x - 1.5 * sum x).
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(6) var<storage, read> wscale: array<u32>;
const STEP = 8u;
const XV = 2u;
const MULT = 16.0;
fn xidx(si: u32, j: u32) -> u32 { return 2u * si + j; }
fn step_sums(u: u32) { xa[u] = 1.5 * hsum(xs[2u * u] + xs[2u * u + 1u]); }
// 8 nibbles of one word (bits 4i..4i+3 hold element i) dotted with x[0..7] as x0, x1, each nibble read as 1+q/16.
// (Widening two nibbles at a time through a pair of f16 1.0s and unpack2x16float measured no faster; PERF.md.)
fn decode(n: u32, si: u32) {
  let wd = w[n * (p.K / 8u) + si];
  let g = n * (p.K / G) + (si * 8u) / G;
#if PROBE
  var sc = 1.0;
  if (LEAVE_OUT != 3u && LEAVE_OUT != 4u && LEAVE_OUT != 5u) { sc = unpack2x16float(wscale[g >> 1u])[g & 1u]; }
#else
  let sc = unpack2x16float(wscale[g >> 1u])[g & 1u];
#endif
  let m = vec4<u32>(0x00780000u);
  let lo = (vec4<u32>(wd) << vec4<u32>(19u, 15u, 11u, 7u)) & m;
  let hi = vec4<u32>(wd << 3u, wd >> 1u, wd >> 5u, wd >> 9u) & m;
  dw[0] = bitcast<vec4<f32>>(lo | ONE);
  dw[1] = bitcast<vec4<f32>>(hi | ONE);
  dc = vec4<f32>(sc, bitcast<f32>(wd & 0x3FFFFFFFu), 0.0, 0.0);
}
fn apply(u: u32) -> f32 {
  var a = dot(dw[0], xs[2u * u]) + dot(dw[1], xs[2u * u + 1u]);
#if PROBE
  if (LEAVE_OUT == 1u || LEAVE_OUT == 4u) { a = dc.y * xs[2u * u].x; }
  if (LEAVE_OUT == 5u) { a = dc.y; }
#endif
  return dc.x * (a - xa[u]);
}
#endif
#if WQ8
// q8 (GGUF Q8_0): int8 [N][K] (4 a word), value q * scale[k / 32]; scales f16 [N][K/32]. A step is 8 bytes;
// each byte read as u = q + 128 (its top bit flipped), and f - 1.5 = q / 256 exactly, taken before the dot:
// eight bits a weight leave the kernel far from its arithmetic limit, and the dot then rounds as a plain one.
@group(0) @binding(2) var<storage, read> w: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read> wscale: array<u32>;
const STEP = 8u;
const XV = 2u;
const MULT = 256.0;
fn xidx(si: u32, j: u32) -> u32 { return 2u * si + j; }
fn step_sums(u: u32) {}
fn widen_u8(wd: u32) -> vec4<f32> {
  let b = wd ^ 0x80808080u;
  let f = vec4<u32>(b << 15u, b << 7u, b >> 1u, b >> 9u) & vec4<u32>(0x007F8000u);
  return bitcast<vec4<f32>>(f | ONE) - vec4<f32>(1.5);
}
fn decode(n: u32, si: u32) {
  let wd = w[n * (p.K / 8u) + si];
  let g = n * (p.K / 32u) + si / 4u;
  dc.x = unpack2x16float(wscale[g >> 1u])[g & 1u];
  dw[0] = widen_u8(wd.x);
  dw[1] = widen_u8(wd.y);
}
fn apply(u: u32) -> f32 { return dc.x * (dot(dw[0], xs[2u * u]) + dot(dw[1], xs[2u * u + 1u])); }
#endif
#if WKQ
// Q4_K / Q5_K blocks of 256 elements as ggml stores them, 144 / 176 bytes (9 / 11 vec4s): d, dmin, 12 bytes of
// 6-bit sub-block scales and mins, (Q5_K: qh[32], bit j of byte l the fifth bit of element l of sub-block j),
// qs[128]: 4 groups of 32 bytes, low nibbles sub-block 2g, high nibbles sub-block 2g + 1. A step is one vec4 of
// quants: chunk c = step % 8 of a block, group g = c / 2, bytes l = 16 * (c % 2) + 0..15 of the group, so
// elements 64g + l (low nibbles, x in xs[0..3]) and 64g + 32 + l (high, xs[4..7]).
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
const STEP = 32u;
const XV = 8u;
const MULT = 1.0;
fn xidx(si: u32, j: u32) -> u32 {
  let c = si % 8u;
  return 64u * (si / 8u) + 16u * (c / 2u) + 4u * (c % 2u) + j + 4u * (j / 4u);
}
fn step_sums(u: u32) {
  xa[2u * u] = hsum(xs[8u * u] + xs[8u * u + 1u] + xs[8u * u + 2u] + xs[8u * u + 3u]);
  xa[2u * u + 1u] = hsum(xs[8u * u + 4u] + xs[8u * u + 5u] + xs[8u * u + 6u] + xs[8u * u + 7u]);
}
// the factors of d * scale * q - dmin * min of the sub-blocks 2g (low nibbles) and 2g + 1 (high) of the block
// whose first vec4 is hd, into dc (d * qmul, the two scales, dmin) and dc2 (the two mins)
fn kcoef(hd: vec4<u32>, g: u32, qmul: f32) {
  // the 6-bit scales and mins of sub-blocks 0..3 (bytes 0..3, 4..7) and 4..7 (packed in bytes 8..11 with the
  // top bits of the first eight), a byte each, then the two of this group
  let hi = g >= 2u;
  let sh = 16u * (g & 1u);
  let sw = select(hd.y & 0x3F3F3F3Fu, (hd.w & 0x0F0F0F0Fu) | ((hd.y >> 2u) & 0x30303030u), hi) >> sh;
  let mw = select(hd.z & 0x3F3F3F3Fu, ((hd.w >> 4u) & 0x0F0F0F0Fu) | ((hd.z >> 2u) & 0x30303030u), hi) >> sh;
  let dm = unpack2x16float(hd.x);
  dc = vec4<f32>(dm.x * qmul, f32(sw & 63u), f32((sw >> 8u) & 63u), dm.y);
  dc2 = vec2<f32>(f32(mw & 63u), f32((mw >> 8u) & 63u));
}
// the step's sum from its quants' dots with x (read as 1 + q / 2^b) and the sums of x
fn apply(u: u32) -> f32 {
  var flo = 0.0;
  var fhi = 0.0;
  for (var k = 0u; k < 4u; k++) {
    flo += dot(dw[k], xs[8u * u + k]);
    fhi += dot(dw[4u + k], xs[8u * u + 4u + k]);
  }
  let sl = xa[2u * u];
  let sx = xa[2u * u + 1u];
  return dc.x * (dc.y * (flo - sl) + dc.z * (fhi - sx)) - dc.w * (dc2.x * sl + dc2.y * sx);
}
#endif
#if WQ4_K
fn decode(n: u32, si: u32) {
  let c = si % 8u;
  let base = (n * (p.K / 256u) + si / 8u) * 9u;
  let q = w[base + 1u + c];
  let m = vec4<u32>(0x00780000u);
  for (var k = 0u; k < 4u; k++) {
    let b = q[k];
    let lo = vec4<u32>(b << 19u, b << 11u, b << 3u, b >> 5u) & m;
    let hb = vec4<u32>(b << 15u, b << 7u, b >> 1u, b >> 9u) & m;
    dw[k] = bitcast<vec4<f32>>(lo | ONE);
    dw[4u + k] = bitcast<vec4<f32>>(hb | ONE);
  }
  kcoef(w[base], c / 2u, 16.0);
}
#endif
#if WQ5_K
fn decode(n: u32, si: u32) {
  let c = si % 8u;
  let g = c / 2u;
  let base = (n * (p.K / 256u) + si / 8u) * 11u;
  let qh = w[base + 1u + c % 2u];
  let q = w[base + 3u + c];
  let m = vec4<u32>(0x007C0000u);
  for (var k = 0u; k < 4u; k++) {
    let l5 = (q[k] & 0x0F0F0F0Fu) | (((qh[k] >> (2u * g)) & 0x01010101u) << 4u);
    let h5 = ((q[k] >> 4u) & 0x0F0F0F0Fu) | (((qh[k] >> (2u * g + 1u)) & 0x01010101u) << 4u);
    let lo = vec4<u32>(l5 << 18u, l5 << 10u, l5 << 2u, l5 >> 6u) & m;
    let hb = vec4<u32>(h5 << 18u, h5 << 10u, h5 << 2u, h5 >> 6u) & m;
    dw[k] = bitcast<vec4<f32>>(lo | ONE);
    dw[4u + k] = bitcast<vec4<f32>>(hb | ONE);
  }
  kcoef(w[base], g, 32.0);
}
#endif
#if WQ6_K
// Q6_K blocks of 256 elements, ggml's 210 bytes each (ql[128], qh[64], int8 scales[16], d) on a stride of 212
// bytes (53 words, so every field is word-aligned; op_blocks_to_gpu pads them). A step is 4 bytes l0..l0+3 of
// one 128-element half h: the ql words at l0 and 32 + l0 and the qh word at l0 hold elements
// 128h + l0 + 32k + 0..3 for k = 0..3 (xs[k]), of scale 8h + l0 / 16 + 2k; q - 32 of 6 bits, so
// sum (q - 32) x = 64 * (sum f x - 1.5 * sum x).
@group(0) @binding(2) var<storage, read> w: array<u32>;
const STEP = 16u;
const XV = 4u;
const MULT = 64.0;
fn xidx(si: u32, j: u32) -> u32 {
  let t = si % 16u;
  return 64u * (si / 16u) + 32u * (t / 8u) + t % 8u + 8u * j;
}
fn step_sums(u: u32) {
  for (var k = 0u; k < 4u; k++) { xa[4u * u + k] = 1.5 * hsum(xs[4u * u + k]); }
}
fn widen6(b: u32) -> vec4<f32> {
  let f = vec4<u32>(b << 17u, b << 9u, b << 1u, b >> 7u) & vec4<u32>(0x007E0000u);
  return bitcast<vec4<f32>>(f | ONE);
}
fn decode(n: u32, si: u32) {
  let t = si % 16u;
  let h = t / 8u;
  let wl = t % 8u;
  let base = (n * (p.K / 256u) + si / 16u) * 53u;
  let qa = w[base + 16u * h + wl];
  let qb = w[base + 16u * h + 8u + wl];
  let qh = w[base + 32u + 8u * h + wl];
  let s0 = w[base + 48u + 2u * h];
  let s1 = w[base + 49u + 2u * h];
  let d = unpack2x16float(w[base + 52u]).x;
  let sh = 24u - 8u * (wl / 4u); // the scale of k = 0 is byte wl / 4 of s0, of k = 1 two bytes up, k = 2, 3 in s1
  let sc = vec4<f32>(f32(i32(s0 << sh) >> 24u), f32(i32(s0 << (sh - 16u)) >> 24u), f32(i32(s1 << sh) >> 24u),
                     f32(i32(s1 << (sh - 16u)) >> 24u));
  let lo = 0x0F0F0F0Fu;
  let hm = 0x30303030u;
  dw[0] = widen6((qa & lo) | ((qh << 4u) & hm));
  dw[1] = widen6((qb & lo) | ((qh << 2u) & hm));
  dw[2] = widen6(((qa >> 4u) & lo) | (qh & hm));
  dw[3] = widen6(((qb >> 4u) & lo) | ((qh >> 2u) & hm));
  dc = sc;
  dc2.x = d;
}
fn apply(u: u32) -> f32 {
  let f = vec4<f32>(dot(dw[0], xs[4u * u]) - xa[4u * u], dot(dw[1], xs[4u * u + 1u]) - xa[4u * u + 1u],
                    dot(dw[2], xs[4u * u + 2u]) - xa[4u * u + 2u], dot(dw[3], xs[4u * u + 3u]) - xa[4u * u + 3u]);
  return dc2.x * dot(dc, f);
}
#endif

#if WF32
// f32 [N][K]: a step is one vec4 of a row, dotted as it is
@group(0) @binding(2) var<storage, read> w: array<vec4<f32>>;
const STEP = 4u;
const XV = 1u;
const MULT = 1.0;
fn xidx(si: u32, j: u32) -> u32 { return si + j; }
fn step_sums(u: u32) {}
fn decode(n: u32, si: u32) { dw[0] = w[n * (p.K / 4u) + si]; }
fn apply(u: u32) -> f32 { return dot(dw[0], xs[u]); }
#endif
#if WMXFP4
// MXFP4 (gpt-oss's experts), split on the GPU (op_blocks_to_gpu): block b's 16 quant bytes four words of the data
// [N][K/8] (element j the low nibble of byte j, j + 16 its high nibble), its exponent (e8m0) byte b of the scales
// [N][K/32]; value 2^(e - 128) * the doubled e2m1 grid. A step is one word, word c = step % 4 of block step / 4:
// elements 4c..4c + 3 (low nibbles, x vec4 8b + c) and 16 + 4c.. (high, x vec4 8b + 4 + c), so the four lanes of a
// block read 64 bytes of its x side by side. (A block a lane, one vec4 and 8 x vec4s at a 128-byte stride between
// lanes, held the GEMV at 821-939 GB/s on the 8B's LM head shape against Q4_K's 1,717; its x loads touched a cache
// line a lane, the reading that led here, not a counter's; PERF.md.) The e2m1 codes are widened two at a time through
// an f16 pair (lib/e2m1.wgsli: the grid's values times 2^-14 as normal f16s, the factor applied to the step's sum),
// not looked up in a table (a load a weight).
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(6) var<storage, read> wscale: array<u32>;
const STEP = 8u;
const XV = 2u;
const MULT = 1.0;
#include "lib/e2m1.wgsli"
fn xidx(si: u32, j: u32) -> u32 { return 8u * (si / 4u) + si % 4u + 4u * j; }
fn step_sums(u: u32) {}
fn decode(n: u32, si: u32) {
  let wi = n * (p.K / 8u) + si;
  let b = w[wi]; // bytes 4c..4c + 3 of block wi / 4
  let bi = wi / 4u;
  let e = (wscale[bi >> 2u] >> (8u * (bi & 3u))) & 255u;
  dc.x = bitcast<f32>(select((e - 1u) << 23u, 0x00200000u << e, e < 2u));
  let f = e2m1_fields(b);
  let l0 = e2m1_pair(f, b);                // elements 4c, 4c + 2
  let l1 = e2m1_pair(f >> 8u, b >> 8u);    // 4c + 1, 4c + 3
  let h0 = e2m1_pair(f >> 4u, b >> 4u);    // 16 + 4c, 16 + 4c + 2
  let h1 = e2m1_pair(f >> 12u, b >> 12u);  // 16 + 4c + 1, 16 + 4c + 3
  dw[0] = vec4<f32>(l0.x, l1.x, l0.y, l1.y);
  dw[1] = vec4<f32>(h0.x, h1.x, h0.y, h1.y);
}
fn apply(u: u32) -> f32 { return dc.x * ((dot(dw[0], xs[2u * u]) + dot(dw[1], xs[2u * u + 1u])) * E2M1_GRID); }
#endif

// token t's x of step si, times sc, into slot u of xs (normed), its sums into xa; returns the step's sum of squares
// (for the norm)
fn load_x(u: u32, si: u32, t: u32, sc: f32) -> f32 {
  var ss = 0.0;
  for (var j = 0u; j < XV; j++) {
    let xi = xidx(si, j);
    var v = x[t * (p.K / 4u) + xi] * sc;
#if PROBE
    if (LEAVE_OUT == 2u || LEAVE_OUT == 5u) { v = vec4<f32>(f32(si)); }
#endif
    ss += dot(v, v);
    if (p.has_norm != 0u) { v = v * (norm_w[xi] + vec4<f32>(p.w_offset)); }
    xs[u * XV + j] = v;
  }
  step_sums(u);
  return ss;
}

#include "lib/glu_act.wgsli"

#if COMBINE
// pair q's expert (ids past E - 1 read as E - 1)
fn pair_expert(q: u32) -> u32 { return min(route[q], p.E - 1u); }
// the k pairs' biases of output row n of token tok, each times its pair's weight
fn pair_bias(tok: u32, n: u32) -> f32 {
  var b = 0.0;
  for (var j = 0u; j < p.k; j++) {
    let q = tok * p.k + j;
    b += route_w[q] * bias[pair_expert(q) * p.rows_w + n];
  }
  return b;
}
#endif

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
#if COMBINE
  // token tok's k pairs, one after the other along the row (their experts' rows from step to step)
  let tok = wid.y;
  let rbase = 0u;
  let nb = wid.x * (TR * R) + rt * R; // first row of this thread-row
  let sp = p.K / STEP;                // steps a pair
#else
#if MOE
  // pair q's expert, its first row in this piece, its x row
  let q = wid.y;
#if ROUTE
  let tq = q / p.k;
  let s_all = topk_rank(tq, li, p.E, p.k, p.route_mode);
  let e = min(tk_si[q % p.k], p.E - 1u);
  if (wid.x == 0u && q % p.k == 0u && li == 0u) {
    let v = topk_weights(s_all, p.k, p.route_mode);
    for (var j = 0u; j < p.k; j++) {
      route[tq * p.k + j] = min(tk_si[j], p.E - 1u);
      route_w[tq * p.k + j] = v[j];
    }
  }
#else
  let e = min(route[q], p.E - 1u);
#endif
  let inpart = e >= p.e_base && e - p.e_base < p.e_count;
  let rbase = select(0u, (e - p.e_base) * p.rows_w, inpart);
  let nb = wid.x * (TR * R) + rt * R; // first row of this thread-row
  let xt = select(q / p.k, q, p.x_pair != 0u);
#else
  let rbase = 0u;
  let nb = (wid.x + wid.y * nwg.x) * (TR * R) + rt * R; // first row of this thread-row
  let xt = 0u;
#endif
#endif
#if COMBINE
  let steps = p.k * sp;
#else
  let steps = p.K / STEP;
#endif
  var acc: array<f32, 32>; // [RR][NT]
  for (var r = 0u; r < RR * NT; r++) { acc[r] = 0.0; }
  var ss: array<f32, NTMAX>;
  for (var t = 0u; t < NT; t++) { ss[t] = 0.0; }
  var rowb: array<u32, 32>; // the row of each sum
  for (var r = 0u; r < RR; r++) {
    var n = min(nb + (r % R), n_out - 1u);
    if (GLU && r >= R) { n += p.glu_half; }
    rowb[r] = rbase + n;
  }
  var i = kt;
  // U steps at a time while they are all inside the row, then single steps
#if MT
  for (; i + (U - 1u) * TK < steps; i += U * TK) {
    for (var t = 0u; t < NT; t++) {
      for (var u = 0u; u < U; u++) { ss[t] += load_x(t * U + u, i + u * TK, t, 1.0); }
    }
    for (var r = 0u; r < RR; r++) {
      for (var u = 0u; u < U; u++) {
        decode(rowb[r], i + u * TK);
        for (var t = 0u; t < NT; t++) { acc[r * NT + t] += apply(t * U + u); }
      }
    }
  }
  for (; i < steps; i += TK) {
    for (var t = 0u; t < NT; t++) { ss[t] += load_x(t * U, i, t, 1.0); }
    for (var r = 0u; r < RR; r++) {
      decode(rowb[r], i);
      for (var t = 0u; t < NT; t++) { acc[r * NT + t] += apply(t * U); }
    }
  }
#else
#if COMBINE
  // the k pairs' steps as one row: each unrolled step's pair j, the row offset of its expert and its step in the row
  var ro: array<u32, 4>;
  var si: array<u32, 4>;
  for (; i + (U - 1u) * TK < steps; i += U * TK) {
    for (var u = 0u; u < U; u++) {
      let s = i + u * TK;
      let j = s / sp;
      let q = tok * p.k + j;
      ro[u] = pair_expert(q) * p.rows_w;
      si[u] = s - j * sp;
      load_x(u, si[u], q, route_w[q]);
    }
    for (var r = 0u; r < RR; r++) {
      for (var u = 0u; u < U; u++) {
        decode(rowb[r] + ro[u], si[u]);
        acc[r] += apply(u);
      }
    }
  }
  for (; i < steps; i += TK) {
    let j = i / sp;
    let q = tok * p.k + j;
    let r0 = pair_expert(q) * p.rows_w;
    let s0 = i - j * sp;
    load_x(0u, s0, q, route_w[q]);
    for (var r = 0u; r < RR; r++) {
      decode(rowb[r] + r0, s0);
      acc[r] += apply(0u);
    }
  }
#else
  // one token: the loop nest as it was before the token loops (the driver kept the sums of the nested form in
  // local memory: the one-token GEMV ran 10-30% slower on the small projections and the LM head; PERF.md)
  var ss1 = 0.0;
  for (; i + (U - 1u) * TK < steps; i += U * TK) {
    for (var u = 0u; u < U; u++) { ss1 += load_x(u, i + u * TK, xt, 1.0); }
    for (var r = 0u; r < RR; r++) {
      for (var u = 0u; u < U; u++) {
        decode(rowb[r], i + u * TK);
        acc[r] += apply(u);
      }
    }
  }
  for (; i < steps; i += TK) {
    ss1 += load_x(0u, i, xt, 1.0);
    for (var r = 0u; r < RR; r++) {
      decode(rowb[r], i);
      acc[r] += apply(0u);
    }
  }
  ss[0] = ss1;
#endif
#endif
  // reduce the RR * NT sums and the NT ss over the TK threads of the thread-row; thread kt < R * NT ends with
  // row nb + kt % R of token kt / R
  let r0 = kt % R;
  let tt = kt / R;
  var tot_ss = 0.0;
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
    for (var t = 0u; t < NT; t++) {
      let a = subgroupAdd(ss[t]);
      if (tt == t) { tot_ss = a; }
    }
  } else {
    let sgid = li / SGS;
    let spr = TK / SGS; // subgroups per thread-row
    for (var r = 0u; r < RR * NT; r++) {
      let a = subgroupAdd(acc[r]);
      if (lane == 0u) { red[sgid * MAXR + r] = a; }
    }
    for (var t = 0u; t < NT; t++) {
      let a = subgroupAdd(ss[t]);
      if (lane == 0u) { red[sgid * MAXR + 32u + t] = a; }
    }
    workgroupBarrier();
    if (kt < R * NT) {
      for (var s = 0u; s < spr; s++) {
        let b = (rt * spr + s) * MAXR;
        tot_ss += red[b + 32u + tt];
        mine += red[b + r0 * NT + tt];
        if (GLU) { mine_up += red[b + (R + r0) * NT + tt]; }
      }
    }
  }
#else
  for (var r = 0u; r < RR * NT; r++) { red[r * WG + li] = acc[r]; }
  for (var t = 0u; t < NT; t++) { red[(32u + t) * WG + li] = ss[t]; }
  workgroupBarrier();
  for (var k = TK / 2u; k > 0u; k >>= 1u) {
    if (kt < k) {
      for (var r = 0u; r < RR * NT; r++) { red[r * WG + li] += red[r * WG + li + k]; }
      for (var t = 0u; t < NT; t++) { red[(32u + t) * WG + li] += red[(32u + t) * WG + li + k]; }
    }
    workgroupBarrier();
  }
  if (kt < R * NT) {
    tot_ss = red[(32u + tt) * WG + rt * TK];
    mine = red[(r0 * NT + tt) * WG + rt * TK];
    if (GLU) { mine_up = red[((R + r0) * NT + tt) * WG + rt * TK]; }
  }
#endif
  let n = nb + r0;
#if COMBINE
  let o = tok * n_out + n;
  let bo = 0u;
  let writes = true;
#else
#if MOE
  let o = q * n_out + n;
  let bo = e * p.rows_w + n;   // the gate row's bias (up: glu_half further)
  let writes = inpart;
#else
  let o = tt * p.y_stride + p.n_off + n;
  let bo = p.n_off + n;
  let writes = true;
#endif
#endif
  if (kt < R * NT && n < n_out && writes) {
    var sc = MULT;
    if (p.has_norm != 0u) { sc *= inverseSqrt(tot_ss / f32(p.K) + p.eps); }
    var v = mine * sc;
    if (GLU) {
      var u = mine_up * sc;
      if (p.has_bias != 0u) { v += bias[bo]; u += bias[bo + p.glu_half]; }
      v = glu_act(p.act, v, u, p.alpha, p.limit);
    } else if (p.has_bias != 0u) {
#if COMBINE
      v += pair_bias(tok, n);
#else
      v += bias[bo];
#endif
    }
    if (p.accumulate != 0u) { v += y[o]; }
    y[o] = v;
  }
}
