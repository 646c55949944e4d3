// The epilogue of the small-M integer-dot GEMM (op_gemv_fast past 8 tokens): kernels/matmul_q8.wgsl split K into S
// slices, each writing its raw sums part[z][t][c] (z < S, t < M tokens, c < N columns, slices part_stride apart);
// this adds them up in slice order and applies what the decode GEMV's epilogue applies (kernels/gemv_q8.wgsl):
//   GLU (glu_half > 0: columns n and n + glu_half are gate and up): y[t][n] (+)= act(g + bias[n]) * (u + bias[n + h])
//   else:                                                           y[t][n] (+)= v + bias[n]
// for n < n_out (glu_half, or N), y rows y_stride apart; (+)= when accumulate (the residual add). One thread an
// output: gid.x over n_out, gid.y the token.
//! variant f32: X=0
struct Params { M: u32, N: u32, S: u32, part_stride: u32, glu_half: u32, act: u32, has_bias: u32, accumulate: u32,
                y_stride: u32, _p0: u32, _p1: u32, _p2: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>; // [S][M][N]
@group(0) @binding(2) var<storage, read> bias: array<f32>; // [N] (has_bias)
@group(0) @binding(3) var<storage, read_write> y: array<f32>; // [M][y_stride]

fn act_fn(g: f32) -> f32 {
  if (p.act == 0u) { return g / (1.0 + exp(-g)); }
  let z = 0.7978845608028654 * (g + 0.044715 * g * g * g);
  return g / (1.0 + exp(-2.0 * z));
}

fn slices(i: u32) -> f32 {
  var v = 0.0;
  for (var z = 0u; z < p.S; z++) { v += part[z * p.part_stride + i]; }
  return v;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let n = gid.x;
  let t = gid.y;
  let n_out = select(p.N, p.glu_half, p.glu_half != 0u);
  if (n >= n_out || t >= p.M) { return; }
  var v = slices(t * p.N + n);
  if (p.glu_half != 0u) {
    var u = slices(t * p.N + n + p.glu_half);
    if (p.has_bias != 0u) { v += bias[n]; u += bias[n + p.glu_half]; }
    v = act_fn(v) * u;
  } else if (p.has_bias != 0u) {
    v += bias[n];
  }
  let o = t * p.y_stride + n;
  if (p.accumulate != 0u) { v += y[o]; }
  y[o] = v;
}
