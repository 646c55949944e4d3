// Embedding row gather: out[t, i] = table[ids[t], i] * scale, table [V, D] f32, f16 (packed pairs),
// q4gsw or q8 (layouts as in matvec.wgsl).
// Token ids come from a GPU buffer (validated < V on the CPU before upload; clamped here for safety).
//! axis storage
// A table split into parts (over the binding limit) runs one dispatch a part: rows v0 .. v0 + rows of the
// V-row table are in this part's buffer; tokens outside them are written by another part.
struct Params { n_tokens: u32, D: u32, V: u32, scale: f32, v0: u32, rows: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
#define WBIND 2
#define SBIND 4
#include "lib/weight_load.wgsli"
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  let t = gid.y;
  if (i >= p.D || t >= p.n_tokens) { return; }
  let id = min(ids[t], p.V - 1u);
  if (id < p.v0 || id >= p.v0 + p.rows) { return; }
  out[t * p.D + i] = wload((id - p.v0) * p.D + i) * p.scale;
}
