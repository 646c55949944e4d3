// Causal multi-head attention for prefill, key tiles shared by consecutive tokens: what attn_prefill.wgsl
// computes (one subgroup a (token, head), lanes over keys for the scores and over dims for P.V, online softmax
// with subgroupMax / subgroupAdd), with NSG subgroups a workgroup taking NSG consecutive tokens of one head, so
// each block of SGS keys is staged in workgroup memory once for all of them (coalesced, a vec4 of padding a row)
// instead of being read by every token. The workgroup walks the union of its tokens' key ranges; a token masks
// the keys outside its own (causal, sliding window), whose probabilities are 0. V rows are read by each subgroup
// for its own dims (the workgroup's subgroups read the same rows, from the cache's L1 lines). Layouts as
// attention.wgsl; head_dim % 4 == 0, head_dim / 4 <= SGS <= 32.
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

override SGS: u32 = 32u; // the device's (fixed) subgroup size, at most 32
override NSG: u32 = 8u;  // tokens (subgroups) a workgroup, at most 8
// lane groups that split a block's keys in P.V when head_dim / 4 (a power of two) is below SGS (as attn_prefill)
override GR: u32 = 1u;

const ROWV = 33u;                          // vec4s a staged key row: head_dim / 4 <= 32, one of padding
var<workgroup> ks: array<vec4<f32>, 1056>; // [SGS keys][ROWV]
var<workgroup> qs: array<vec4<f32>, 256>;  // [NSG][32]
var<workgroup> lo_hi: array<atomic<u32>, 2>;
var<workgroup> range: vec2<u32>; // the workgroup's keys: first, last

@compute @workgroup_size(SGS * NSG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(subgroup_invocation_id) lane: u32) {
  let sg = li / SGS;
  let h = wid.x;
  let t = min(wid.y * NSG + sg, p.n_tokens - 1u); // a subgroup past the last token repeats it, writes nothing
  let hd = p.head_dim;
  let nc = hd / 4u;
  let kvbase = (h / (p.n_head / p.n_kv_head)) * kv_rows() * hd;
  let tb = p.seq * p.max_blocks;
  let qb = t * p.q_stride + p.q_off + h * hd;
  for (var c = lane; c < nc; c += SGS) {
    qs[sg * 32u + c] = vec4<f32>(q[qb + 4u * c], q[qb + 4u * c + 1u], q[qb + 4u * c + 2u], q[qb + 4u * c + 3u]);
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
  // blocks of keys aligned to multiples of SGS: a token meets the same blocks whichever tokens share its
  // workgroup (blocks without a key it sees leave its sums exactly as they were), so its result does not depend
  // on how a prompt is chunked
  // the walk spans under 2 * ctx keys: a valid dispatch's positions differ by less than ctx (a linear cache has
  // them all < ctx; a ring's chunk is consecutive and shorter than the ring), and a token sees at most ctx keys
  // (kv_first), so the cap changes nothing for them and bounds the loop on hostile positions
  if (li == 0u) {
    let hi = atomicLoad(&lo_hi[1]);
    let lo = max(atomicLoad(&lo_hi[0]), hi - min(hi, 2u * p.ctx));
    range = vec2<u32>(lo / SGS * SGS, hi);
  }
  let r = workgroupUniformLoad(&range);
  var m = -3.0e38;
  var lsum = 0.0;
  var acc = vec4<f32>(0.0);
  let g = select(0u, lane / nc, GR > 1u); // P.V: this lane's key group and dims (GR = 1: all keys, dims lane)
  let c = select(lane, lane % nc, GR > 1u);
  for (var j0 = r.x; j0 <= r.y; j0 += SGS) {
    let s0 = j0 % p.ctx; // the block's first slot; its keys wrap at most once (ctx >= 128 >= SGS, or linear)
    let nj = min(SGS, r.y + 1u - j0);
    for (var e = li; e < SGS * nc; e += SGS * NSG) {
      let kr = e / nc;
      let sl = kv_slot(s0 + kr, p.ctx);
      var v = vec4<f32>(0.0);
      if (kr < nj) { v = kload4(kvbase + kv_row_of(tb, sl) * hd + 4u * (e % nc)); }
      ks[kr * ROWV + e % nc] = v;
    }
    workgroupBarrier();
    let j = j0 + lane;
    let valid = j >= first && j <= last;
    var s = -3.0e38;
    if (valid) {
      var dt = 0.0;
      for (var cc = 0u; cc < nc; cc++) { dt += dot(qs[sg * 32u + cc], ks[lane * ROWV + cc]); }
      s = dt * p.scale;
      if (p.softcap > 0.0) { s = p.softcap * tanh(s / p.softcap); }
    }
    let m_new = max(m, subgroupMax(s));
    var pj = 0.0;
    if (valid) { pj = exp(s - m_new); }
    let alpha = exp(m - m_new);
    lsum = lsum * alpha + subgroupAdd(pj);
    m = m_new;
    acc *= alpha;
    var sv = kv_slot(s0 + g, p.ctx);
    for (var jj = 0u; jj < nj; jj += GR) {
      let pb = subgroupShuffle(pj, jj + g); // 0 for keys this token does not see
      if (jj + g < nj && c < nc) { acc += pb * vload4(kvbase + kv_row_of(tb, sv) * hd + 4u * c); }
      sv = kv_slot(sv + GR, p.ctx);
    }
    workgroupBarrier(); // the next block's keys overwrite ks
  }
  if (GR > 1u) { // the key groups' sums, into every lane
    for (var o = nc; o < SGS; o *= 2u) { acc += subgroupShuffleXor(acc, o); }
  }
  if (wid.y * NSG + sg < p.n_tokens && lane < nc) {
    let ob = t * p.out_stride + h * hd + 4u * lane;
    let sn = sink_norm(h, m, lsum);
    let rr = acc * sn.x / sn.y;
    out[ob] = rr.x;
    out[ob + 1u] = rr.y;
    out[ob + 2u] = rr.z;
    out[ob + 3u] = rr.w;
  }
}
