// KV-cache append: for each new token t, cache[h][pos[t]][d] = src[t * stride + off + h * head_dim + d] for K
// and V at once, four elements per thread (head_dim % 4 == 0). The caches are one layer's
// [n_kv_head][ctx][head_dim] slice, f32 or f16. f16 is stored as packed pairs in u32 (pack2x16float), so it
// needs no shader-f16: half the bytes, math stays f32. Positions come from a GPU buffer, so a recorded decode
// step replays with new positions. Position ps lands in slot ps % ctx: a cache of ctx slots is a ring when the
// layer's window is shorter than the context (the session only makes rings that hold every key a query sees).
// Variants "paged": the caches are a paged pool (lib/kv_page.wgsli), the sequence's block table at row seq.
//! variant f32: KV_F16=0
//! variant f16: KV_F16=1
//! variant f32paged: KV_F16=0 PAGED=1
//! variant f16paged: KV_F16=1 PAGED=1
struct Params { n_tokens: u32, n_kv_head: u32, head_dim: u32, ctx: u32,
                k_stride: u32, k_off: u32, v_stride: u32, v_off: u32,
                seq: u32, max_blocks: u32, block: u32, n_blocks: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ksrc: array<f32>;
@group(0) @binding(2) var<storage, read> vsrc: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<u32>;
#if KV_F16
@group(0) @binding(4) var<storage, read_write> kc: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> vc: array<vec2<u32>>;
fn put(is_k: bool, e: u32, v: vec4<f32>) {
  let w = vec2<u32>(pack2x16float(v.xy), pack2x16float(v.zw));
  if (is_k) { kc[e / 4u] = w; } else { vc[e / 4u] = w; }
}
#else
@group(0) @binding(4) var<storage, read_write> kc: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> vc: array<vec4<f32>>;
fn put(is_k: bool, e: u32, v: vec4<f32>) {
  if (is_k) { kc[e / 4u] = v; } else { vc[e / 4u] = v; }
}
#endif
#if PAGED
@group(0) @binding(6) var<storage, read> table: array<u32>;
#endif
#include "lib/kv_page.wgsli"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x * 4u; // h * head_dim + d, d % 4 == 0
  let t = gid.y;
  if (i >= p.n_kv_head * p.head_dim || t >= p.n_tokens) { return; }
  let ps = pos[t] % p.ctx;
  let h = i / p.head_dim;
  let d = i % p.head_dim;
  let dst = (h * kv_rows() + kv_row_of(p.seq * p.max_blocks, ps)) * p.head_dim + d;
  let kb = t * p.k_stride + p.k_off + i;
  let vb = t * p.v_stride + p.v_off + i;
  put(true, dst, vec4<f32>(ksrc[kb], ksrc[kb + 1u], ksrc[kb + 2u], ksrc[kb + 3u]));
  put(false, dst, vec4<f32>(vsrc[vb], vsrc[vb + 1u], vsrc[vb + 2u], vsrc[vb + 3u]));
}
