// Mixture-of-experts router: the top-k experts of each token and their weights (src/ops/op_moe.c, op_moe_route).
// logits [T][E] f32 (E <= 256), ids [T][k] u32, w [T][k] f32, k <= 8; scale [E] f32 (used when has_scale). A
// workgroup a token; the ranking and the weights of each mode are lib/moe_topk.wgsli's (the expert GEMV that routes
// its own pairs shares them), then w_j *= scale[id_j] when has_scale (Gemma 4's per_expert_scale, after the
// renormalisation).
//! variant f32: X=0
struct Params { T: u32, E: u32, k: u32, mode: u32, has_scale: u32, _p0: u32, _p1: u32, _p2: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> scale: array<f32>;
@group(0) @binding(3) var<storage, read_write> ids: array<u32>;
@group(0) @binding(4) var<storage, read_write> w: array<f32>;

const TOPK_WG = 256u;
fn topk_logit(t: u32, e: u32) -> f32 { return logits[t * p.E + e]; }
#include "lib/moe_topk.wgsli"

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let t = wid.x + wid.y * nwg.x; // the token (the grid split over y past the per-dimension limit)
  if (t >= p.T) { return; }     // uniform: the whole workgroup
  let s_all = topk_rank(t, lid.x, p.E, p.k, p.mode);
  if (lid.x == 0u) {
    let v = topk_weights(s_all, p.k, p.mode);
    for (var j = 0u; j < p.k; j++) {
      let id = min(tk_si[j], p.E - 1u);
      var r = v[j];
      if (p.has_scale != 0u) { r *= scale[id]; }
      ids[t * p.k + j] = id;
      w[t * p.k + j] = r;
    }
  }
}
