// Causal multi-head attention for prefill (many query tokens) with GQA, sliding window and logit soft-capping,
// one subgroup a (query token, head): what kernels/attention.wgsl computes, without its workgroup reductions.
// The lanes take SGS keys at a time, each the whole dot product of its key with q (q in workgroup memory, read
// as broadcast vec4s); the block's max and sum are one subgroupMax / subgroupAdd (online softmax); then each
// lane accumulates its own dims of P.V (dims 4 * (lane + SGS * i)), the probabilities broadcast with
// subgroupShuffle (split over lane groups, each its share of the keys, when a head has fewer vec4s than the
// subgroup has lanes). NSG subgroups a workgroup take consecutive heads of one token, which share K/V rows in the
// cache when the heads share a KV head (GQA). Key j of query t (position pos[t]) runs over
// max(0, pos - window + 1)..pos, in slot j % ctx (a ring, or a linear cache). Layouts as attention.wgsl:
// q [n_tokens][q_stride] (head h at q_off + h * head_dim), caches [n_kv_head][ctx][head_dim], out
// [n_tokens][out_stride]; head_dim % 4 == 0, head_dim / 4 <= 16 * SGS and <= 128.
// Variants "paged": the caches are a paged pool (lib/kv_page.wgsli), the sequence's block table at row seq.
//! variant f32: KV_F16=0 requires=subgroups
//! variant f16: KV_F16=1 requires=subgroups
//! variant f32paged: KV_F16=0 PAGED=1 requires=subgroups
//! variant f16paged: KV_F16=1 PAGED=1 requires=subgroups
struct Params { n_tokens: u32, n_head: u32, n_kv_head: u32, head_dim: u32,
                q_stride: u32, q_off: u32, out_stride: u32, ctx: u32,
                window: u32, scale: f32, softcap: f32, seq: u32,
                max_blocks: u32, block: u32, n_blocks: u32, sinks: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
#include "lib/kv_load.wgsli"
#include "lib/kv_range.wgsli"
@group(0) @binding(4) var<storage, read> pos: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
#if PAGED
@group(0) @binding(6) var<storage, read> table: array<u32>; // the pool's block tables; the sequence's at seq
#endif
#include "lib/kv_page.wgsli"
#include "lib/attn_sink.wgsli"

override SGS: u32 = 32u; // the device's (fixed) subgroup size
override NSG: u32 = 4u;  // subgroups (heads) a workgroup
override NV: u32 = 1u;   // vec4s of P.V a lane: ceil(head_dim / 4 / SGS), at most 16
// lane groups that split a block's keys in P.V when a head has fewer vec4s than the subgroup lanes (head_dim / 4
// a power of two dividing SGS; NV = 1): group g = lane / (head_dim / 4) takes keys g, g + GR, ..., and the
// groups' sums are added with subgroupShuffleXor at the end (1: every lane its own dims, all keys)
override GR: u32 = 1u;

var<workgroup> qs: array<vec4<f32>, 512>; // [NSG <= 4][head_dim / 4 <= 128]
var<workgroup> last_pos: u32;

@compute @workgroup_size(SGS * NSG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(subgroup_invocation_id) lane: u32) {
  let sg = li / SGS;
  let t = wid.y;
  let h = wid.x * NSG + sg;
  let hh = min(h, p.n_head - 1u); // a subgroup past the last head repeats it and writes nothing
  let hd = p.head_dim;
  let nc = hd / 4u;
  let kvh = hh / (p.n_head / p.n_kv_head);
  let qb = t * p.q_stride + p.q_off + hh * hd;
  for (var c = lane; c < nc; c += SGS) {
    qs[sg * 128u + c] = vec4<f32>(q[qb + 4u * c], q[qb + 4u * c + 1u], q[qb + 4u * c + 2u], q[qb + 4u * c + 3u]);
  }
  if (li == 0u) { last_pos = kv_last(pos[t]); }
  let last = workgroupUniformLoad(&last_pos); // also the barrier after the q loads
  let first = kv_first(last, p.ctx, p.window);
  let kvbase = kvh * kv_rows() * hd;
  let tb = p.seq * p.max_blocks;
  var m = -3.0e38;
  var lsum = 0.0;
  var acc: array<vec4<f32>, 16>;
  for (var i = 0u; i < NV; i++) { acc[i] = vec4<f32>(0.0); }
  for (var j0 = first; j0 <= last; j0 += SGS) {
    let s0 = j0 % p.ctx; // the block's first slot; its keys wrap at most once (ctx >= 128 >= SGS, or linear)
    let j = j0 + lane;
    var s = -3.0e38;
    if (j <= last) {
      let sl = kv_slot(s0 + lane, p.ctx);
      let kb = kvbase + kv_row_of(tb, sl) * hd;
      var dt = 0.0;
      for (var c = 0u; c < nc; c++) { dt += dot(qs[sg * 128u + c], kload4(kb + 4u * c)); }
      s = dt * p.scale;
      if (p.softcap > 0.0) { s = p.softcap * tanh(s / p.softcap); }
    }
    let m_new = max(m, subgroupMax(s));
    var pj = 0.0;
    if (j <= last) { pj = exp(s - m_new); }
    let alpha = exp(m - m_new);
    lsum = lsum * alpha + subgroupAdd(pj);
    m = m_new;
    for (var i = 0u; i < NV; i++) { acc[i] *= alpha; }
    let nj = min(SGS, last + 1u - j0);
    if (GR > 1u) {
      let g = lane / nc;
      let c = lane % nc;
      var sv = kv_slot(s0 + g, p.ctx);
      for (var jj = 0u; jj < nj; jj += GR) {
        let pb = subgroupShuffle(pj, jj + g); // 0 past the block's last key
        if (jj + g < nj) { acc[0] += pb * vload4(kvbase + kv_row_of(tb, sv) * hd + 4u * c); }
        sv = kv_slot(sv + GR, p.ctx);
      }
    } else {
      var sv = s0;
      for (var jj = 0u; jj < nj; jj++) {
        let pb = subgroupShuffle(pj, jj);
        let vb = kvbase + kv_row_of(tb, sv) * hd;
        for (var i = 0u; i < NV; i++) {
          let c = lane + SGS * i;
          if (c < nc) { acc[i] += pb * vload4(vb + 4u * c); }
        }
        sv += 1u;
        if (sv == p.ctx) { sv = 0u; }
      }
    }
  }
  if (GR > 1u) { // the key groups' sums, into every lane
    for (var o = nc; o < SGS; o *= 2u) { acc[0] += subgroupShuffleXor(acc[0], o); }
  }
  if (h < p.n_head) {
    let sn = sink_norm(h, m, lsum);
    let ob = t * p.out_stride + h * hd;
    for (var i = 0u; i < NV; i++) {
      let c = lane + SGS * i;
      if (c < nc) {
        let r = acc[i] * sn.x / sn.y;
        out[ob + 4u * c] = r.x;
        out[ob + 4u * c + 1u] = r.y;
        out[ob + 4u * c + 2u] = r.z;
        out[ob + 4u * c + 3u] = r.w;
      }
    }
  }
}
