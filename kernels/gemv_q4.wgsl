// Decode GEMV for q4gsw weights (one token), tuned for bandwidth and fused with its neighbours:
//   y[n] (+)= s * sum_k W[n, k] * x'[k] (+ bias[n]),  x' = x * (norm_w + w_offset), s = 1/rms(x) when has_norm
// so the RMSNorm before a projection, the residual add after it (accumulate) and the gated activation of the
// MLP (GLU: rows n and n + glu_half are gate and up, y[n] = act(gate) * up) need no dispatch of their own.
//
// Threads: a workgroup of TK * TR threads owns TR * R rows. The TK threads of a thread-row split K into u32
// words (8 nibbles) that lie side by side in memory: at each step lane kt reads word kt of a run of TK words of
// every row, so a subgroup reads 128 contiguous bytes of weights and 1 KiB of x with each load instruction.
// Each lane keeps R row sums (2R with GLU: gate and up), so its slice of x is loaded once for R rows, and U
// steps are unrolled so that U * R loads are in flight. Rows past the end are read clamped to the last row and
// dropped, so the loads have no branch around them. Needs K % 32 == 0. (A lane reading a whole 16-byte group,
// 4 words, a step measured no faster on the H200; PERF.md.)
//
// Nibbles are widened without an int-to-float conversion (a quarter-rate instruction on GPUs, and what
// limited the previous kernel): q placed in the mantissa of 1.0 reads as 1 + q/16, and
//   sum_k (q_k - 8) x_k = 16 * (sum_k (1 + q_k/16) x_k - 1.5 * sum_k x_k),
// where the sum of x over the word is computed once for all R rows. That is a shift and a mask per weight.
//
// Variant "sg" reduces with subgroupAdd (fixed subgroup size SGS dividing TK, checked by the op's plan); when
// TK == SGS a thread-row is one subgroup and needs no workgroup memory. Variant "wg" reduces through
// workgroup memory (TK a power of two, TK * TR <= 128).
//! variant wg: SG=0
//! variant sg: SG=1 requires=subgroups
struct Params { N: u32, K: u32, has_bias: u32, accumulate: u32,
                has_norm: u32, eps: f32, w_offset: f32, glu_half: u32,
                act: u32, _p0: u32, _p1: u32, _p2: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> wscale: array<u32>;
@group(0) @binding(6) var<storage, read> norm_w: array<vec4<f32>>;
override G: u32 = 32u;   // q4gsw group size
override R: u32 = 8u;    // rows per thread-row
override TK: u32 = 128u; // threads along K in a thread-row
override TR: u32 = 1u;   // thread-rows per workgroup
override SGS: u32 = 32u; // subgroup size (sg variant)
override U: u32 = 4u;    // steps unrolled (1..4)
// bench_kernels only: 1 no nibble decode, 2 no x loads, 3 no scale loads, 4 neither decode nor scales,
// 5 the weight loads alone
override PROBE: u32 = 0u;
// GLU and the row count are pipeline constants, so every loop over the sums has a constant trip count and
// the compiler keeps them in registers
override GLU: bool = false;
override RR: u32 = select(R, 2u * R, GLU);
override WG: u32 = TK * TR;

const MAXR = 33u; // 2 * 16 row sums + the sum of squares
#if SG
var<workgroup> red: array<f32, 1056>; // [WG / SGS subgroups, at most 32][MAXR]
#else
var<workgroup> red: array<f32, 4224>; // [MAXR][WG <= 128]
#endif

// 8 nibbles of one word (bits 4i..4i+3 hold element i) dotted with x[0..7] as x0, x1, each nibble read as 1+q/16.
// (Widening two nibbles at a time through a pair of f16 1.0s and unpack2x16float measured no faster; PERF.md.)
fn dot8(wd: u32, x0: vec4<f32>, x1: vec4<f32>) -> f32 {
  let m = vec4<u32>(0x00780000u);
  let one = vec4<u32>(0x3F800000u);
  let lo = (vec4<u32>(wd) << vec4<u32>(19u, 15u, 11u, 7u)) & m;
  let hi = vec4<u32>(wd << 3u, wd >> 1u, wd >> 5u, wd >> 9u) & m;
  return dot(bitcast<vec4<f32>>(lo | one), x0) + dot(bitcast<vec4<f32>>(hi | one), x1);
}

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
  let nb = (wid.x + wid.y * nwg.x) * (TR * R) + rt * R; // first row of this thread-row
  let words = p.K / 8u;
  let gpc = p.K / G;
  var acc: array<f32, 32>;
  for (var r = 0u; r < RR; r++) { acc[r] = 0.0; }
  var ss = 0.0;
  var rowb: array<u32, 32>; // the row of each sum
  for (var r = 0u; r < RR; r++) {
    var n = min(nb + (r % R), n_out - 1u);
    if (GLU && r >= R) { n += p.glu_half; }
    rowb[r] = n;
  }
  var i = kt;
  // U steps at a time while they are all inside the row, then single steps
  for (; i + (U - 1u) * TK < words; i += U * TK) {
    var xs: array<vec4<f32>, 8>; // [U][2]
    var s15: array<f32, 4>;
    for (var u = 0u; u < U; u++) {
      let wi = i + u * TK;
      var v0 = x[2u * wi];
      var v1 = x[2u * wi + 1u];
      if (PROBE == 2u || PROBE == 5u) { v0 = vec4<f32>(f32(wi)); v1 = v0; }
      ss += dot(v0, v0) + dot(v1, v1);
      if (p.has_norm != 0u) {
        v0 = v0 * (norm_w[2u * wi] + vec4<f32>(p.w_offset));
        v1 = v1 * (norm_w[2u * wi + 1u] + vec4<f32>(p.w_offset));
      }
      xs[2u * u] = v0;
      xs[2u * u + 1u] = v1;
      let t = v0 + v1;
      s15[u] = 1.5 * (t.x + t.y + t.z + t.w);
    }
    for (var r = 0u; r < RR; r++) {
      let n = rowb[r];
      for (var u = 0u; u < U; u++) {
        let wi = i + u * TK;
        let wd = w[n * words + wi];
        let g = n * gpc + (wi * 8u) / G;
        var sc = 1.0;
        if (PROBE != 3u && PROBE != 4u && PROBE != 5u) { sc = unpack2x16float(wscale[g >> 1u])[g & 1u]; }
        var a = dot8(wd, xs[2u * u], xs[2u * u + 1u]);
        if (PROBE == 1u || PROBE == 4u) { a = bitcast<f32>(wd & 0x3FFFFFFFu) * xs[2u * u].x; }
        if (PROBE == 5u) { a = bitcast<f32>(wd & 0x3FFFFFFFu); }
        acc[r] += sc * (a - s15[u]);
      }
    }
  }
  for (; i < words; i += TK) {
    var v0 = x[2u * i];
    var v1 = x[2u * i + 1u];
    ss += dot(v0, v0) + dot(v1, v1);
    if (p.has_norm != 0u) {
      v0 = v0 * (norm_w[2u * i] + vec4<f32>(p.w_offset));
      v1 = v1 * (norm_w[2u * i + 1u] + vec4<f32>(p.w_offset));
    }
    let t = v0 + v1;
    let s15 = 1.5 * (t.x + t.y + t.z + t.w);
    for (var r = 0u; r < RR; r++) {
      let n = rowb[r];
      let g = n * gpc + (i * 8u) / G;
      let sc = unpack2x16float(wscale[g >> 1u])[g & 1u];
      acc[r] += sc * (dot8(w[n * words + i], v0, v1) - s15);
    }
  }
  // reduce the RR sums and ss over the TK threads of the thread-row; thread kt < R ends with row nb + kt
  var tot_ss = 0.0;
  var mine = 0.0;
  var mine_up = 0.0;
#if SG
  if (TK == SGS) {
    for (var r = 0u; r < RR; r++) {
      let t = subgroupAdd(acc[r]);
      if (kt == r % R) {
        if (r < R) { mine = t; } else { mine_up = t; }
      }
    }
    tot_ss = subgroupAdd(ss);
  } else {
    let sgid = li / SGS;
    let spr = TK / SGS; // subgroups per thread-row
    for (var r = 0u; r < RR; r++) {
      let t = subgroupAdd(acc[r]);
      if (lane == 0u) { red[sgid * MAXR + r] = t; }
    }
    let ts = subgroupAdd(ss);
    if (lane == 0u) { red[sgid * MAXR + 32u] = ts; }
    workgroupBarrier();
    if (kt < R) {
      for (var s = 0u; s < spr; s++) {
        let b = (rt * spr + s) * MAXR;
        tot_ss += red[b + 32u];
        mine += red[b + kt];
        if (GLU) { mine_up += red[b + R + kt]; }
      }
    }
  }
#else
  for (var r = 0u; r < RR; r++) { red[r * WG + li] = acc[r]; }
  red[32u * WG + li] = ss;
  workgroupBarrier();
  for (var k = TK / 2u; k > 0u; k >>= 1u) {
    if (kt < k) {
      for (var r = 0u; r < RR; r++) { red[r * WG + li] += red[r * WG + li + k]; }
      red[32u * WG + li] += red[32u * WG + li + k];
    }
    workgroupBarrier();
  }
  if (kt < R) {
    tot_ss = red[32u * WG + rt * TK];
    mine = red[kt * WG + rt * TK];
    if (GLU) { mine_up = red[(R + kt) * WG + rt * TK]; }
  }
#endif
  let n = nb + kt;
  if (kt < R && n < n_out) {
    var sc = 16.0;
    if (p.has_norm != 0u) { sc *= inverseSqrt(tot_ss / f32(p.K) + p.eps); }
    var v = mine * sc;
    if (GLU) {
      var u = mine_up * sc;
      if (p.has_bias != 0u) { v += bias[n]; u += bias[n + p.glu_half]; }
      v = act_fn(v) * u;
    } else if (p.has_bias != 0u) {
      v += bias[n];
    }
    if (p.accumulate != 0u) { v += y[n]; }
    y[n] = v;
  }
}
