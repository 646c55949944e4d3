// Tensor-core GEMM on f16 operands (op_gemm_f16): Y[m, n] = sum_k X[m, k] * W[n, k] (+ bias[n]) on subgroup
// matrices (Dawn's chromium_experimental_subgroup_matrix), f32 sums. X [Mp][K] and W [Np][K] are f16 in u32 pairs
// (element k in the low half when k is even: kernels/dequant_f16.wgsl's output), their rows Mp, Np rounded up to
// 128 so that every tile reads inside them; Y [M][N] f32, rows y_stride apart, columns from n_off. K a multiple of
// TK. The Params block is kernels/matmul.wgsl's.
//
// A workgroup of 256 threads, 8 subgroups of 32 (the op's predicate: subgroups of exactly 32, the adapter offering
// f16 x f16 -> f32 at 16x16x16), owns 64 rows by 128 columns; subgroup s owns rows 32 (s / 4).. and columns
// 32 (s % 4)..: 2 x 2 result matrices of 16 x 16. It walks K TK a step (32, or 64: `_k64`), copying X[64][TK] and
// W[128][TK] into workgroup memory as f16, rows XS = TK + 8 halves apart (the rows of a matrix load start in
// different banks), the next step's words waiting in registers while this step is multiplied. Each thread copies
// groups of 4 words (its vec4s): word by word (a subgroup's 32 lanes reading 128 consecutive bytes; with TK = 32
// the two rows a subgroup writes at once are rows 4 apart, in disjoint banks), or `_v4` 16-byte chunks. A thread's
// rows are r0, r0 + RS, ..., so its addresses are a base plus multiples of a stride, computed once. Results go
// straight to Y where the whole tile lies inside it and there is no bias; elsewhere through the subgroup's 16 x 16
// corner of workgroup memory, where its lanes add the bias and write the rows and columns inside Y. `_nomma` and
// `_nostage` are the bench's probes (the copies without the multiplies; the multiplies on whatever workgroup memory
// holds): their results are not the product.
//! axis f16: MMA=1 requires=shader-f16,subgroups,subgroup-matrix
//! axis -: K64=0 TK=32 | _k64: K64=1 TK=64
//! axis -: V4=0 | _v4: V4=1
//! axis -: MODE=0 | _nomma: NOMMA=1 | _nostage: NOSTAGE=1
// The subgroup-matrix builtins want their offsets subgroup-uniform: the subgroup's index comes from
// @builtin(subgroup_id), which WGSL's analysis knows to be uniform in a subgroup.
struct Params { M: u32, N: u32, K: u32, has_bias: u32, y_stride: u32, n_off: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
#if V4
@group(0) @binding(1) var<storage, read> x: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
#else
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
#endif
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

const TM = 64u;
const TN = 128u;
const TK = {{TK}}u;
const XS = TK + 8u;
const WR = TK / 2u; // words a staged row
#if V4
const CPR = WR / 4u; // chunks a row
const RS = 256u / CPR; // rows between a thread's chunks
const UNIT = 8u; // elements a load unit (a chunk)
#else
const RS = 256u / WR; // rows between a thread's words
const UNIT = 2u;  // a word
#endif
var<workgroup> xs: array<f16, TM * XS>; // [TM][XS]: X[m0 + r][k0 + c] at xs[r * XS + c]
var<workgroup> ws: array<f16, TN * XS>; // [TN][XS]: W[n0 + r][k0 + c] at ws[r * XS + c]
var<workgroup> st: array<f32, 2048>;    // [8 subgroups][16 x 16]: a result matrix on its way out

// the thread's first row in a staged tile and its unit in the row (see the header)
fn first_row(li: u32) -> u32 {
#if V4
  return li / CPR;
#else
#if K64
  return li / WR;
#else
  let v = (li / 16u) % 8u; // TK = 32: two rows a subgroup, made 4 apart
  return 8u * (li / 128u) + v / 2u + 4u * (v % 2u);
#endif
#endif
}
fn unit_col(li: u32) -> u32 {
#if V4
  return li % CPR;
#else
  return li % WR;
#endif
}

// group g of the thread's units of this step: from index b (the thread's first unit at k0) with rs units between
// its rows; word by word, unit i of group g is its (4 g + i)-th
fn ldx(b: u32, rs: u32, g: u32) -> vec4<u32> {
#if V4
  return x[b + g * rs];
#else
  let i = b + 4u * g * rs;
  return vec4<u32>(x[i], x[i + rs], x[i + 2u * rs], x[i + 3u * rs]);
#endif
}
fn ldw(b: u32, rs: u32, g: u32) -> vec4<u32> {
#if V4
  return w[b + g * rs];
#else
  let i = b + 4u * g * rs;
  return vec4<u32>(w[i], w[i + rs], w[i + 2u * rs], w[i + 3u * rs]);
#endif
}
// the same group into workgroup memory from half o (the thread's first unit)
fn stx(o: u32, g: u32, v: vec4<u32>) {
#if V4
  let a = o + g * RS * XS;
  for (var i = 0u; i < 4u; i++) {
    let h = bitcast<vec2<f16>>(v[i]);
    xs[a + 2u * i] = h.x;
    xs[a + 2u * i + 1u] = h.y;
  }
#else
  for (var i = 0u; i < 4u; i++) {
    let a = o + (4u * g + i) * RS * XS;
    let h = bitcast<vec2<f16>>(v[i]);
    xs[a] = h.x;
    xs[a + 1u] = h.y;
  }
#endif
}
fn stw(o: u32, g: u32, v: vec4<u32>) {
#if V4
  let a = o + g * RS * XS;
  for (var i = 0u; i < 4u; i++) {
    let h = bitcast<vec2<f16>>(v[i]);
    ws[a + 2u * i] = h.x;
    ws[a + 2u * i + 1u] = h.y;
  }
#else
  for (var i = 0u; i < 4u; i++) {
    let a = o + (4u * g + i) * RS * XS;
    let h = bitcast<vec2<f16>>(v[i]);
    ws[a] = h.x;
    ws[a + 1u] = h.y;
  }
#endif
}

// lane l of subgroup s writes its 8 of the 256 values of the result matrix staged at st[256 s..], the tile whose
// corner is (gm0, gn0) in Y
fn write_tile(s: u32, l: u32, gm0: u32, gn0: u32) {
  for (var i = 0u; i < 8u; i++) {
    let e = l + 32u * i;
    let gm = gm0 + e / 16u;
    let gn = gn0 + e % 16u;
    if (gm < p.M && gn < p.N) {
      var v = st[256u * s + e];
      if (p.has_bias != 0u) { v += bias[p.n_off + gn]; }
      y[gm * p.y_stride + p.n_off + gn] = v;
    }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(subgroup_id) s: u32, @builtin(subgroup_invocation_id) l: u32) {
  let m0 = wid.y * TM;
  let n0 = wid.x * TN;
  let sm = 32u * (s / 4u); // the subgroup's rows and columns in the tile
  let sn = 32u * (s % 4u);
  var c00: subgroup_matrix_result<f32, 16, 16>;
  var c01: subgroup_matrix_result<f32, 16, 16>;
  var c10: subgroup_matrix_result<f32, 16, 16>;
  var c11: subgroup_matrix_result<f32, 16, 16>;
  // the thread's units: X rows m0 + r0 + RS i, W rows n0 + r0 + RS i, at unit column c0 of each row
  let r0 = first_row(li);
  let c0 = unit_col(li);
  let ku = p.K / UNIT; // units a row of X or W
  let rs = RS * ku;
  let xb = (m0 + r0) * ku + c0;
  let wb = (n0 + r0) * ku + c0;
  let so = r0 * XS + UNIT * c0;
  var xa = ldx(xb, rs, 0u);
#if K64
  var xc = ldx(xb, rs, 1u);
#endif
  var wa = ldw(wb, rs, 0u);
  var wc = ldw(wb, rs, 1u);
#if K64
  var we = ldw(wb, rs, 2u);
  var wg = ldw(wb, rs, 3u);
#endif
  for (var k0 = 0u; k0 < p.K; k0 += TK) {
#ifnot NOSTAGE
    stx(so, 0u, xa);
    stw(so, 0u, wa);
    stw(so, 1u, wc);
#if K64
    stx(so, 1u, xc);
    stw(so, 2u, we);
    stw(so, 3u, wg);
#endif
#endif
    workgroupBarrier();
#ifnot NOSTAGE
    if (k0 + TK < p.K) {
      let k1 = (k0 + TK) / UNIT;
      xa = ldx(xb + k1, rs, 0u);
      wa = ldw(wb + k1, rs, 0u);
      wc = ldw(wb + k1, rs, 1u);
#if K64
      xc = ldx(xb + k1, rs, 1u);
      we = ldw(wb + k1, rs, 2u);
      wg = ldw(wb + k1, rs, 3u);
#endif
    }
#endif
#ifnot NOMMA
    for (var kk = 0u; kk < TK; kk += 16u) {
      let a0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&xs, sm * XS + kk, false, XS);
      let a1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&xs, (sm + 16u) * XS + kk, false, XS);
      let b0 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&ws, sn * XS + kk, true, XS);
      let b1 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&ws, (sn + 16u) * XS + kk, true, XS);
      c00 = subgroupMatrixMultiplyAccumulate(a0, b0, c00);
      c01 = subgroupMatrixMultiplyAccumulate(a0, b1, c01);
      c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10);
      c11 = subgroupMatrixMultiplyAccumulate(a1, b1, c11);
    }
#endif
    workgroupBarrier();
  }
  let gm = m0 + sm;
  let gn = n0 + sn;
  if (p.has_bias == 0u && m0 + TM <= p.M && n0 + TN <= p.N) { // the whole tile inside Y: straight there
    let o = gm * p.y_stride + p.n_off + gn;
    let o16 = 16u * p.y_stride;
    subgroupMatrixStore(&y, o, c00, false, p.y_stride);
    subgroupMatrixStore(&y, o + 16u, c01, false, p.y_stride);
    subgroupMatrixStore(&y, o + o16, c10, false, p.y_stride);
    subgroupMatrixStore(&y, o + o16 + 16u, c11, false, p.y_stride);
    return;
  }
  subgroupMatrixStore(&st, 256u * s, c00, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm, gn);
  workgroupBarrier();
  subgroupMatrixStore(&st, 256u * s, c01, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm, gn + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&st, 256u * s, c10, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm + 16u, gn);
  workgroupBarrier();
  subgroupMatrixStore(&st, 256u * s, c11, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm + 16u, gn + 16u);
}
