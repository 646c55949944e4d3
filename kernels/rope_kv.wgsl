// RoPE of Q and K plus the KV-cache append, in one dispatch (what three dispatches did: rope q, rope k,
// kv write). For token t at position pos[t]: the n_head query heads are rotated in place in x; the n_kv_head
// key heads are read from x, rotated and written to the cache with the value heads (from x or from vsrc).
// A thread takes 4 elements of one head: two rotation pairs (half-split: i, i+rot/2; adjacent: 2i, 2i+1), or
// 4 elements past rot_dim (partial rotary: copied as they are), so f16 caches are written as whole packed
// u32 pairs. Needs head_dim % 4 == 0 and rot_dim % 4 == 0. cs: [max_pos][rot/2] (cos, sin).
// Variants "paged": the caches are a paged pool (lib/kv_page.wgsli), the sequence's block table at row seq.
//! variant f32: KV_F16=0
//! variant f16: KV_F16=1
//! variant f32paged: KV_F16=0 PAGED=1
//! variant f16paged: KV_F16=1 PAGED=1
struct Params { n_tokens: u32, n_head: u32, n_kv_head: u32, head_dim: u32,
                rot_dim: u32, mode: u32, max_pos: u32, ctx: u32,
                q_off: u32, q_stride: u32, k_off: u32, k_stride: u32,
                v_off: u32, v_stride: u32, v_in_x: u32, seq: u32,
                max_blocks: u32, block: u32, n_blocks: u32, _q: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> vsrc: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<u32>;
@group(0) @binding(4) var<storage, read> cs: array<vec2<f32>>;
#if KV_F16
@group(0) @binding(5) var<storage, read_write> kc: array<u32>;
@group(0) @binding(6) var<storage, read_write> vc: array<u32>;
fn put2(is_k: bool, e: u32, a: f32, b: f32) {
  let w = pack2x16float(vec2<f32>(a, b));
  if (is_k) { kc[e / 2u] = w; } else { vc[e / 2u] = w; }
}
#else
@group(0) @binding(5) var<storage, read_write> kc: array<f32>;
@group(0) @binding(6) var<storage, read_write> vc: array<f32>;
fn put2(is_k: bool, e: u32, a: f32, b: f32) {
  if (is_k) { kc[e] = a; kc[e + 1u] = b; } else { vc[e] = a; vc[e + 1u] = b; }
}
#endif

#if PAGED
@group(0) @binding(7) var<storage, read> table: array<u32>;
#endif
#include "lib/kv_page.wgsli"

fn vload(i: u32) -> f32 {
  if (p.v_in_x != 0u) { return x[i]; }
  return vsrc[i];
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let j = gid.x;    // quad within the head
  let slot = gid.y; // query heads, then key heads
  let t = gid.z;
  if (j * 4u >= p.head_dim || slot >= p.n_head + p.n_kv_head || t >= p.n_tokens) { return; }
  let ps = min(pos[t], p.max_pos - 1u);
  let is_q = slot < p.n_head;
  let h = select(slot - p.n_head, slot, is_q);
  let base = select(p.k_off + t * p.k_stride, p.q_off + t * p.q_stride, is_q) + h * p.head_dim;
  let half = p.rot_dim / 2u;
  // the two element pairs (e0, e0+1) and (e2, e2+1) this thread owns
  var e0 = 4u * j;
  var e2 = 4u * j + 2u;
  let rotating = 4u * j < p.rot_dim;
  if (rotating && p.mode == 0u) { e0 = 2u * j; e2 = 2u * j + half; }
  var v = array<f32, 4>(x[base + e0], x[base + e0 + 1u], x[base + e2], x[base + e2 + 1u]);
  if (rotating) {
    if (p.mode == 0u) { // pairs (e0, e2) and (e0+1, e2+1), frequencies 2j and 2j+1
      let c0 = cs[ps * half + 2u * j];
      let c1 = cs[ps * half + 2u * j + 1u];
      let a0 = v[0]; let a1 = v[1]; let b0 = v[2]; let b1 = v[3];
      v[0] = a0 * c0.x - b0 * c0.y; v[2] = b0 * c0.x + a0 * c0.y;
      v[1] = a1 * c1.x - b1 * c1.y; v[3] = b1 * c1.x + a1 * c1.y;
    } else { // pairs (e0, e0+1) and (e2, e2+1), frequencies 2j and 2j+1
      let c0 = cs[ps * half + 2u * j];
      let c1 = cs[ps * half + 2u * j + 1u];
      let a0 = v[0]; let b0 = v[1]; let a1 = v[2]; let b1 = v[3];
      v[0] = a0 * c0.x - b0 * c0.y; v[1] = b0 * c0.x + a0 * c0.y;
      v[2] = a1 * c1.x - b1 * c1.y; v[3] = b1 * c1.x + a1 * c1.y;
    }
  }
  if (is_q) {
    if (rotating) {
      x[base + e0] = v[0]; x[base + e0 + 1u] = v[1]; x[base + e2] = v[2]; x[base + e2 + 1u] = v[3];
    }
    return;
  }
  // slot pos % ctx (a ring, see kv_write.wgsl)
  let dst = (h * kv_rows() + kv_row_of(p.seq * p.max_blocks, pos[t] % p.ctx)) * p.head_dim;
  put2(true, dst + e0, v[0], v[1]);
  put2(true, dst + e2, v[2], v[3]);
  let vb = p.v_off + t * p.v_stride + h * p.head_dim;
  put2(false, dst + e0, vload(vb + e0), vload(vb + e0 + 1u));
  put2(false, dst + e2, vload(vb + e2), vload(vb + e2 + 1u));
}
