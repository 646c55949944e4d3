// Embedding row gather: out[t, i] = table[ids[t], i] * scale, table [V, D] f32 or f16 (packed pairs).
// Token ids come from a GPU buffer (validated < V on the CPU before upload; clamped here for safety).
//! variant f32: WF16=0
//! variant f16: WF16=1
struct Params { n_tokens: u32, D: u32, V: u32, scale: f32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
#if WF16
@group(0) @binding(2) var<storage, read> table: array<u32>;
fn tload(e: u32) -> f32 { return unpack2x16float(table[e >> 1u])[e & 1u]; }
#else
@group(0) @binding(2) var<storage, read> table: array<f32>;
fn tload(e: u32) -> f32 { return table[e]; }
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
