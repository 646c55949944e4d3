// KV-cache append: for each new token t, cache[h][pos[t]][d] = src[t * src_stride + src_off + h * head_dim + d]
// for K and V at once. The caches are one layer's [n_kv_head][ctx][head_dim] slice. Positions come from a GPU
// buffer, so a recorded decode step replays with new positions.
//! variant f32: KV_F16=0
//! variant f16: KV_F16=1 requires=shader-f16
struct Params { n_tokens: u32, n_kv_head: u32, head_dim: u32, ctx: u32,
                k_stride: u32, k_off: u32, v_stride: u32, v_off: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ksrc: array<f32>;
@group(0) @binding(2) var<storage, read> vsrc: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<u32>;
#if KV_F16
@group(0) @binding(4) var<storage, read_write> kc: array<f16>;
@group(0) @binding(5) var<storage, read_write> vc: array<f16>;
#else
@group(0) @binding(4) var<storage, read_write> kc: array<f32>;
@group(0) @binding(5) var<storage, read_write> vc: array<f32>;
#endif

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x; // h * head_dim + d
  let t = gid.y;
  if (i >= p.n_kv_head * p.head_dim || t >= p.n_tokens) { return; }
  let ps = pos[t];
  if (ps >= p.ctx) { return; }
  let h = i / p.head_dim;
  let d = i % p.head_dim;
  let dst = (h * p.ctx + ps) * p.head_dim + d;
#if KV_F16
  kc[dst] = f16(ksrc[t * p.k_stride + p.k_off + i]);
  vc[dst] = f16(vsrc[t * p.v_stride + p.v_off + i]);
#else
  kc[dst] = ksrc[t * p.k_stride + p.k_off + i];
  vc[dst] = vsrc[t * p.v_stride + p.v_off + i];
#endif
}
