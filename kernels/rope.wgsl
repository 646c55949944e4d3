// Rotary position embedding, in place on rows of heads: x[t, h, 0..head_dim) for t < n_tokens, h < n_heads,
// where token t starts at x_off + t * token_stride and head h at h * head_dim (so Q and K inside a fused QKV
// row work).
// The angle table cs[pos][i] = (cos, sin) of pos * inv_freq[i] is built on the CPU at load (it carries
// llama3 scaling, per-pair frequency factors and partial rotary); positions come from a GPU buffer.
// mode 0: half-split pairs (i, i + rot/2) (HF / NeoX); mode 1: adjacent pairs (2i, 2i+1) (GGUF / Meta).
// Only the first rot_dim elements of each head rotate.
//! variant f32: X=0
struct Params { n_tokens: u32, n_heads: u32, head_dim: u32, rot_dim: u32,
                token_stride: u32, mode: u32, max_pos: u32, x_off: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> pos: array<u32>;
@group(0) @binding(3) var<storage, read> cs: array<vec2<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let half = p.rot_dim / 2u;
  let i = gid.x;               // pair index
  let th = gid.y + gid.z * nwg.y; // token * n_heads + head
  if (i >= half || th >= p.n_tokens * p.n_heads) { return; }
  let t = th / p.n_heads;
  let h = th % p.n_heads;
  let ps = min(pos[t], p.max_pos - 1u);
  let c = cs[ps * half + i];
  let base = p.x_off + t * p.token_stride + h * p.head_dim;
  var i0 = base + i;
  var i1 = base + i + half;
  if (p.mode == 1u) { i0 = base + 2u * i; i1 = i0 + 1u; }
  let a = x[i0];
  let b = x[i1];
  x[i0] = a * c.x - b * c.y;
  x[i1] = b * c.x + a * c.y;
}
