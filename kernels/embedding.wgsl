// Embedding row gather: out[t, i] = table[ids[t], i] * scale, table [V, D] f32, f16 (packed pairs),
// q4gsw or q8 (layouts as in matvec.wgsl).
// Token ids come from a GPU buffer (validated < V on the CPU before upload; clamped here for safety).
//! variant f32: WF32=1 WF16=0 WQ4=0 WQ8=0
//! variant f16: WF32=0 WF16=1 WQ4=0 WQ8=0
//! variant q4: WF32=0 WF16=0 WQ4=1 WQ8=0
//! variant q8: WF32=0 WF16=0 WQ4=0 WQ8=1
struct Params { n_tokens: u32, D: u32, V: u32, scale: f32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
#if WF32
@group(0) @binding(2) var<storage, read> table: array<f32>;
fn tload(e: u32) -> f32 { return table[e]; }
#endif
#if WF16
@group(0) @binding(2) var<storage, read> table: array<u32>;
fn tload(e: u32) -> f32 { return unpack2x16float(table[e >> 1u])[e & 1u]; }
#endif
#if WQ4
// q4gsw: nibble q of element e at bits 4*(e%8) of word e/8, value (q - 8) * scale[e / G]
@group(0) @binding(2) var<storage, read> table: array<u32>;
@group(0) @binding(4) var<storage, read> wscale: array<u32>;
override G: u32 = 32u;
fn tload(e: u32) -> f32 {
  let q = (table[e >> 3u] >> (4u * (e & 7u))) & 15u;
  let g = e / G;
  return (f32(q) - 8.0) * unpack2x16float(wscale[g >> 1u])[g & 1u];
}
#endif
#if WQ8
// q8: int8 of element e in byte e%4 of word e/4, value q * scale[e / 32]
@group(0) @binding(2) var<storage, read> table: array<u32>;
@group(0) @binding(4) var<storage, read> wscale: array<u32>;
fn tload(e: u32) -> f32 {
  let q = i32(table[e >> 2u] << (24u - 8u * (e & 3u))) >> 24u;
  let g = e >> 5u;
  return f32(q) * unpack2x16float(wscale[g >> 1u])[g & 1u];
}
#endif
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  let t = gid.y;
  if (i >= p.D || t >= p.n_tokens) { return; }
  let id = min(ids[t], p.V - 1u);
  out[t * p.D + i] = tload(id * p.D + i) * p.scale;
}
