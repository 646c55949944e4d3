// Decode GEMV for q4gsw weights (one token), tuned for bandwidth and fused with its neighbours:
//   y[n] (+)= s * sum_k W[n, k] * x'[k] (+ bias[n]),  x' = x * (norm_w + w_offset), s = 1/rms(x) when has_norm
// so the RMSNorm before a projection, the residual add after it (accumulate) and the gated activation of the
// MLP (glu_half > 0: rows n and n + glu_half are gate and up, y[n] = act(gate) * up) need no dispatch of their
// own. A workgroup of 128 threads owns R rows (override ROWS); each thread takes 16-byte chunks of K (32
// nibbles = one group of 32), loads its slice of x once and reuses it for all R rows, so x is read R times
// less than the weights. Needs K % 32 == 0. Variant "sg" reduces with subgroupAdd (32-lane subgroups, checked
// by the op's predicate); "wg" through workgroup memory.
//! variant wg: SG=0
//! variant sg: SG=1 requires=subgroups
struct Params { N: u32, K: u32, has_bias: u32, accumulate: u32,
                has_norm: u32, eps: f32, w_offset: f32, glu_half: u32,
                act: u32, _p0: u32, _p1: u32, _p2: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> wscale: array<u32>;
@group(0) @binding(6) var<storage, read> norm_w: array<vec4<f32>>;
override G: u32 = 32u;
override ROWS: u32 = 16u;
// GLU and the row count are pipeline constants, so every loop over the accumulators has a constant trip count
// and the compiler keeps them in registers (a loop bound read from the uniform block made them local memory)
override GLU: bool = false;
override RR: u32 = select(ROWS, 2u * ROWS, GLU);

const WG = 128u;
const MAXR = 33u; // 2 * 16 accumulators + the sum of squares
#if SG
var<workgroup> red: array<f32, 132>; // [4 subgroups][MAXR]
#else
var<workgroup> red: array<f32, 4224>; // [MAXR][WG]
#endif

fn nib(wd: u32, i: u32) -> f32 { return f32((wd >> (4u * i)) & 15u) - 8.0; }

fn act_fn(g: f32) -> f32 {
  if (p.act == 0u) { return g / (1.0 + exp(-g)); }
  let z = 0.7978845608028654 * (g + 0.044715 * g * g * g);
  return g / (1.0 + exp(-2.0 * z));
}

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let l = lid.x;
  let n0 = (wid.x + wid.y * nwg.x) * ROWS;
  let glu = GLU;
  let n_out = select(p.N, p.glu_half, glu);
  let chunks = p.K / 32u;
  let gpc = p.K / G;
  var acc: array<f32, 32>;
  for (var r = 0u; r < RR; r++) { acc[r] = 0.0; }
  var ss = 0.0;
  for (var c = l; c < chunks; c += WG) {
    var xs: array<vec4<f32>, 8>;
    for (var j = 0u; j < 8u; j++) {
      var v = x[c * 8u + j];
      ss += dot(v, v);
      if (p.has_norm != 0u) { v = v * (norm_w[c * 8u + j] + vec4<f32>(p.w_offset)); }
      xs[j] = v;
    }
    for (var r = 0u; r < RR; r++) {
      if (n0 + (r % ROWS) < n_out) {
        var n = n0 + r;
        if (glu) { n = n0 + (r % ROWS) + select(0u, p.glu_half, r >= ROWS); }
        let q = w[n * chunks + c];
        let g = n * gpc + (c * 32u) / G;
        let sc = unpack2x16float(wscale[g >> 1u])[g & 1u];
        var s = 0.0;
        for (var j = 0u; j < 4u; j++) {
          let wd = q[j];
          s += dot(vec4<f32>(nib(wd, 0u), nib(wd, 1u), nib(wd, 2u), nib(wd, 3u)), xs[2u * j]);
          s += dot(vec4<f32>(nib(wd, 4u), nib(wd, 5u), nib(wd, 6u), nib(wd, 7u)), xs[2u * j + 1u]);
        }
        acc[r] += sc * s;
      }
    }
  }
  // reduce the RR accumulators and ss over the workgroup
#if SG
  let sg = l / 32u;
  for (var r = 0u; r < RR; r++) {
    let t = subgroupAdd(acc[r]);
    if (l % 32u == 0u) { red[sg * MAXR + r] = t; }
  }
  let ts = subgroupAdd(ss);
  if (l % 32u == 0u) { red[sg * MAXR + 32u] = ts; }
  workgroupBarrier();
  var tot_ss = 0.0;
  for (var s4 = 0u; s4 < 4u; s4++) { tot_ss += red[s4 * MAXR + 32u]; }
  var mine = 0.0;
  var mine_up = 0.0;
  if (l < ROWS) {
    for (var s4 = 0u; s4 < 4u; s4++) {
      mine += red[s4 * MAXR + l];
      if (glu) { mine_up += red[s4 * MAXR + ROWS + l]; }
    }
  }
#else
  for (var r = 0u; r < RR; r++) { red[r * WG + l] = acc[r]; }
  red[32u * WG + l] = ss;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (l < k) {
      for (var r = 0u; r < RR; r++) { red[r * WG + l] += red[r * WG + l + k]; }
      red[32u * WG + l] += red[32u * WG + l + k];
    }
    workgroupBarrier();
  }
  let tot_ss = red[32u * WG];
  var mine = 0.0;
  var mine_up = 0.0;
  if (l < ROWS) {
    mine = red[l * WG];
    if (glu) { mine_up = red[(ROWS + l) * WG]; }
  }
#endif
  let n = n0 + l;
  if (l < ROWS && n < n_out) {
    var sc = 1.0;
    if (p.has_norm != 0u) { sc = inverseSqrt(tot_ss / f32(p.K) + p.eps); }
    var v = mine * sc;
    if (glu) {
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
