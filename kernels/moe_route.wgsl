// Mixture-of-experts router: the top-k experts of each token and their weights (src/ops/op_moe.c, op_moe_route).
// logits [T][E] f32 (E <= 256: one thread an expert), ids [T][k] u32, w [T][k] f32, k <= 8; scale [E] f32 (used when
// has_scale). A workgroup a token ranks each expert by how many rank above it (the larger logit, the lower index
// first on ties: a total order, so ranks are distinct) in one pass over the token's logits in workgroup memory;
// the experts of rank below k take their slots (slot 0 the largest), with no rounds of reductions. The selection is
// on the logits in every mode (softmax is monotonic, so it picks the experts transformers' torch.topk of the
// probabilities picks, up to its unspecified order among equal values). Weights, m the largest logit:
//   mode 0  softmax over all E, the chosen probabilities: exp(l_j - m) / sum_e exp(l_e - m)
//   mode 1  the same renormalised over the k: p_j / sum_i p_i (Qwen3-MoE norm_topk_prob, Mixtral, Gemma 4)
//   mode 2  softmax over the k chosen logits: exp(l_j - m) / sum_i exp(l_i - m) (gpt-oss)
// then w_j *= scale[id_j] when has_scale (Gemma 4's per_expert_scale, after the renormalisation).
//! variant f32: X=0
struct Params { T: u32, E: u32, k: u32, mode: u32, has_scale: u32, _p0: u32, _p1: u32, _p2: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> scale: array<f32>;
@group(0) @binding(3) var<storage, read_write> ids: array<u32>;
@group(0) @binding(4) var<storage, read_write> w: array<f32>;

const NONE = 0xffffffffu;
var<workgroup> rv: array<f32, 256>;
var<workgroup> sel_v: array<f32, 8>;
var<workgroup> sel_i: array<u32, 8>;

// whether (bv, bi) ranks above (av, ai): a real entry above none, then the larger value, then the lower index
fn above(av: f32, ai: u32, bv: f32, bi: u32) -> bool {
  if (bi == NONE) { return false; }
  if (ai == NONE) { return true; }
  return bv > av || (bv == av && bi < ai);
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let t = wid.x + wid.y * nwg.x; // the token (the grid split over y past the per-dimension limit)
  if (t >= p.T) { return; }     // uniform: the whole workgroup
  let e = lid.x;
  var lv = 0.0;
  if (e < p.E) { lv = logits[t * p.E + e]; }
  rv[e] = lv;
  workgroupBarrier();
  if (e < p.E) {
    var rank = 0u;
    for (var i = 0u; i < p.E; i++) {
      if (above(lv, e, rv[i], i)) { rank++; }
    }
    if (rank < p.k) {
      sel_v[rank] = lv;
      sel_i[rank] = e;
    }
  }
  workgroupBarrier();
  let m = sel_v[0];
  // sum over all E of exp(l_e - m), for modes 0 and 1
  rv[e] = select(0.0, exp(lv - m), e < p.E);
  workgroupBarrier();
  for (var o = 128u; o > 0u; o >>= 1u) {
    if (e < o) { rv[e] += rv[e + o]; }
    workgroupBarrier();
  }
  if (e == 0u) {
    let s_all = rv[0];
    var s_k = 0.0;
    var v: array<f32, 8>;
    for (var j = 0u; j < p.k; j++) {
      v[j] = exp(sel_v[j] - m);
      if (p.mode != 2u) { v[j] = v[j] / s_all; }
      s_k += v[j];
    }
    for (var j = 0u; j < p.k; j++) {
      var r = v[j];
      if (p.mode != 0u) { r = r / s_k; }
      let id = min(sel_i[j], p.E - 1u);
      if (p.has_scale != 0u) { r *= scale[id]; }
      ids[t * p.k + j] = id;
      w[t * p.k + j] = r;
    }
  }
}
