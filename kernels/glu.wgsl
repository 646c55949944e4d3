// Gated linear unit of the MLP: out[r, i] = act(x[r, g_off + i]) * u[r, u_off + i] for i < n, rows r,
// x rows strided by in_stride (gate and up may sit side by side in one fused projection output), u rows by
// u_stride.
// act 0 = SiLU (Llama, Qwen), 1 = GELU with tanh approximation (Gemma's GeGLU).
//! variant f32: X=0
struct Params { n: u32, rows: u32, in_stride: u32, g_off: u32, u_off: u32, act: u32, u_stride: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> u: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  let r = gid.y;
  if (i >= p.n || r >= p.rows) { return; }
  let g = x[r * p.in_stride + p.g_off + i];
  let v = u[r * p.u_stride + p.u_off + i];
  var a: f32;
  if (p.act == 0u) {
    a = g / (1.0 + exp(-g));
  } else {
    // 0.5 * g * (1 + tanh(z)) == g * sigmoid(2z): same function, no cancellation for negative g
    let z = 0.7978845608028654 * (g + 0.044715 * g * g * g);
    a = g / (1.0 + exp(-2.0 * z));
  }
  out[r * p.n + i] = a * v;
}
