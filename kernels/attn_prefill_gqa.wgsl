// Causal GQA attention for prefill with K and V tiles shared by the query heads of one KV head and a block of
// tokens: what attn_prefill_tiled.wgsl computes for one (token, head) row, with a subgroup taking HG query heads of
// one KV head for its token (HG a divisor of n_head / n_kv_head) and NSG subgroups a workgroup taking NSG
// consecutive tokens, so each block of SGS keys is staged in workgroup memory once, K and then V, for NSG * HG rows.
// Scores: lane j takes key j of the block and its dot products with the HG heads' q (broadcast from workgroup
// memory), each staged key vec4 used HG times; the online softmax (max, sum, rescaling) is kept per row with
// subgroupMax / subgroupAdd. P.V: each lane its dims of every head (NV vec4s a head, dims 4 * (lane + SGS * i)),
// or, when a head has fewer vec4s than lanes (a power of two dividing SGS), GR lane groups each a share of the
// block's keys (summed with subgroupShuffleXor at the end); a staged V vec4 is used HG times, the probabilities
// broadcast with subgroupShuffle. The workgroup walks the union of its tokens' key ranges in blocks aligned to
// multiples of SGS (blocks outside every token's causal range and window are never read); a token masks the keys
// outside its own, so a block without a key it sees leaves its sums exactly as they were and its result does not
// depend on which tokens share its workgroup. With SEPV the V tile has its own workgroup memory and is staged with
// K; without it (memory short) V overwrites K after the scores. Key j of query t (position pos[t]) runs over
// max(0, pos - window + 1)..pos, in slot j % ctx (a ring of ctx >= 128 >= SGS slots, or a linear cache). Layouts
// as attention.wgsl; head_dim % 4 == 0, head_dim / 4 <= 16 * SGS, HG <= 8, HG * NV <= 16. The sizes (override
// constants) come from op_attn_prefill_gqa_plan, which fits them to the device's workgroup memory.
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

override SGS: u32 = 32u;    // the device's (fixed) subgroup size: keys a block
override NSG: u32 = 4u;     // tokens (subgroups) a workgroup
override HG: u32 = 1u;      // query heads a subgroup, at most 8
override NV: u32 = 1u;      // vec4s of P.V a lane and head: ceil(head_dim / 4 / SGS)
override GR: u32 = 1u;      // lane groups that split a block's keys in P.V (NV = 1)
override ROWV: u32 = 33u;   // vec4s a staged key row: head_dim / 4, made odd
override QN: u32 = 256u;    // vec4s of q: NSG * HG * head_dim / 4
override SEPV: bool = false; // V in its own tile (VT = SGS * ROWV), else over K after the scores (VT = 1)
override VT: u32 = 1u;

var<workgroup> ks: array<vec4<f32>, SGS * ROWV>; // [SGS keys][ROWV]: K, then V when !SEPV
var<workgroup> vs: array<vec4<f32>, VT>;         // [SGS keys][ROWV]: V when SEPV
var<workgroup> qs: array<vec4<f32>, QN>;         // [NSG][HG][head_dim / 4]
var<workgroup> lo_hi: array<atomic<u32>, 2>;
var<workgroup> range: vec2<u32>; // the workgroup's keys: first, last

// rows kr < nj of the block at slot s0 (wrapping once at ctx) into a tile, zeros past them: K (into ks), V into ks
// (which = 1) or V into vs (which = 2)
fn stage(li: u32, kvbase: u32, s0: u32, nj: u32, which: u32) {
  let nc = p.head_dim / 4u;
  for (var e = li; e < SGS * nc; e += SGS * NSG) {
    let kr = e / nc;
    let c = e % nc;
    let sl = kv_slot(s0 + kr, p.ctx);
    var v = vec4<f32>(0.0);
    if (kr < nj) {
      let at = kvbase + kv_row_of(p.seq * p.max_blocks, sl) * p.head_dim + 4u * c;
      if (which == 0u) { v = kload4(at); } else { v = vload4(at); }
    }
    if (which == 2u) { vs[kr * ROWV + c] = v; } else { ks[kr * ROWV + c] = v; }
  }
}

@compute @workgroup_size(SGS * NSG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(subgroup_invocation_id) lane: u32) {
  let sg = li / SGS;
  let h0 = wid.x * HG; // the subgroup's first query head; its HG heads read one KV head
  let t = min(wid.y * NSG + sg, p.n_tokens - 1u); // a subgroup past the last token repeats it, writes nothing
  let hd = p.head_dim;
  let nc = hd / 4u;
  let kvbase = (h0 / (p.n_head / p.n_kv_head)) * kv_rows() * hd;
  let qrow = sg * HG * nc;
  for (var x = lane; x < HG * nc; x += SGS) { // the HG heads' q are consecutive in the token's row
    let qb = t * p.q_stride + p.q_off + h0 * hd + 4u * x;
    qs[qrow + x] = vec4<f32>(q[qb], q[qb + 1u], q[qb + 2u], q[qb + 3u]);
  }
  let last = kv_last(pos[t]);
  let first = kv_first(last, p.ctx, p.window);
  if (li == 0u) {
    atomicStore(&lo_hi[0], 0xFFFFFFFFu);
    atomicStore(&lo_hi[1], 0u);
  }
  workgroupBarrier();
  if (lane == 0u) {
    atomicMin(&lo_hi[0], first);
    atomicMax(&lo_hi[1], last);
  }
  workgroupBarrier();
  // the walk spans under 2 * ctx keys: a valid dispatch's positions differ by less than ctx (a linear cache has
  // them all < ctx; a ring's chunk is consecutive and shorter than the ring), and a token sees at most ctx keys
  // (kv_first), so the cap changes nothing for them and bounds the loop on hostile positions
  if (li == 0u) {
    let hi = atomicLoad(&lo_hi[1]);
    let lo = max(atomicLoad(&lo_hi[0]), hi - min(hi, 2u * p.ctx));
    range = vec2<u32>(lo / SGS * SGS, hi);
  }
  let r = workgroupUniformLoad(&range);
  var m: array<f32, 8>;
  var lsum: array<f32, 8>;
  var acc: array<vec4<f32>, 16>; // [HG][NV]
  for (var h = 0u; h < HG; h++) {
    m[h] = -3.0e38;
    lsum[h] = 0.0;
    for (var i = 0u; i < NV; i++) { acc[h * NV + i] = vec4<f32>(0.0); }
  }
  let g = select(0u, lane / nc, GR > 1u); // P.V: this lane's key group and first dims
  let cl = select(lane, lane % nc, GR > 1u);
  for (var j0 = r.x; j0 <= r.y; j0 += SGS) {
    let s0 = j0 % p.ctx; // the block's first slot; its keys wrap at most once (ctx >= 128 >= SGS, or linear)
    let nj = min(SGS, r.y + 1u - j0);
    stage(li, kvbase, s0, nj, 0u);
    if (SEPV) { stage(li, kvbase, s0, nj, 2u); }
    workgroupBarrier();
    let j = j0 + lane;
    let valid = j >= first && j <= last;
    var s: array<f32, 8>;
    for (var h = 0u; h < HG; h++) { s[h] = -3.0e38; }
    if (valid) {
      var dt: array<f32, 8>;
      for (var h = 0u; h < HG; h++) { dt[h] = 0.0; }
      for (var cc = 0u; cc < nc; cc++) {
        let kv = ks[lane * ROWV + cc];
        for (var h = 0u; h < HG; h++) { dt[h] += dot(qs[qrow + h * nc + cc], kv); }
      }
      for (var h = 0u; h < HG; h++) {
        var sc = dt[h] * p.scale;
        if (p.softcap > 0.0) { sc = p.softcap * tanh(sc / p.softcap); }
        s[h] = sc;
      }
    }
    var pj: array<f32, 8>;
    for (var h = 0u; h < HG; h++) {
      let m_new = max(m[h], subgroupMax(s[h]));
      var pp = 0.0;
      if (valid) { pp = exp(s[h] - m_new); }
      let alpha = exp(m[h] - m_new);
      lsum[h] = lsum[h] * alpha + subgroupAdd(pp);
      m[h] = m_new;
      pj[h] = pp;
      for (var i = 0u; i < NV; i++) { acc[h * NV + i] *= alpha; }
    }
    if (!SEPV) { // every subgroup is done with K: V over it
      workgroupBarrier();
      stage(li, kvbase, s0, nj, 1u);
      workgroupBarrier();
    }
    for (var jj = 0u; jj < nj; jj += GR) {
      let kj = jj + g;
      var pb: array<f32, 8>;
      for (var h = 0u; h < HG; h++) { pb[h] = subgroupShuffle(pj[h], kj); } // 0 for keys the token does not see
      if (kj < nj) {
        for (var i = 0u; i < NV; i++) {
          let c = cl + SGS * i;
          if (c < nc) {
            var v: vec4<f32>;
            if (SEPV) { v = vs[kj * ROWV + c]; } else { v = ks[kj * ROWV + c]; }
            for (var h = 0u; h < HG; h++) { acc[h * NV + i] += pb[h] * v; }
          }
        }
      }
    }
    workgroupBarrier(); // the next block's keys overwrite the tiles
  }
  if (GR > 1u) { // the key groups' sums, into every lane
    for (var o = nc; o < SGS; o *= 2u) {
      for (var h = 0u; h < HG; h++) { acc[h] += subgroupShuffleXor(acc[h], o); }
    }
  }
  if (wid.y * NSG + sg < p.n_tokens) {
    for (var h = 0u; h < HG; h++) {
      for (var i = 0u; i < NV; i++) {
        let c = lane + SGS * i;
        if (c < nc) {
          let ob = t * p.out_stride + (h0 + h) * hd + 4u * c;
          let sn = sink_norm(h0 + h, m[h], lsum[h]);
          let rr = acc[h * NV + i] * sn.x / sn.y;
          out[ob] = rr.x;
          out[ob + 1u] = rr.y;
          out[ob + 2u] = rr.z;
          out[ob + 3u] = rr.w;
        }
      }
    }
  }
}
