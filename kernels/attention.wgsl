// Causal multi-head attention over the KV cache with GQA, optional sliding window and logit soft-capping.
// One workgroup per (query token, head): keys are streamed in blocks of 128 with an online softmax, so no
// T x T scores are kept. Query t sits at position pos[t] and sees keys max(0, pos-window+1)..pos; key j is in
// slot j % ctx (a ring of ctx >= 128 slots holding at least the window, or a linear cache with every j < ctx).
// q: [n_tokens][q_stride] (head h at q_off + h*head_dim); caches: [n_kv_head][ctx][head_dim];
// out: [n_tokens][out_stride] (head h at h*head_dim). head_dim <= 512, head_dim % 4 == 0. f16 caches are
// packed pairs in u32 (see kv_write.wgsl).
// Variants "paged": the caches are a paged pool (lib/kv_page.wgsli), the sequence's block table at row seq.
// With Params.sinks, each head's sink logit joins the softmax (lib/attn_sink.wgsli).
//! variant f32: KV_F16=0
//! variant f16: KV_F16=1
//! variant f32paged: KV_F16=0 PAGED=1
//! variant f16paged: KV_F16=1 PAGED=1
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

const B = 128u;
var<workgroup> qs: array<f32, 512>;
var<workgroup> ps: array<f32, 128>;
var<workgroup> red: array<f32, 128>;

fn dot4(a: vec4<f32>, b: vec4<f32>) -> f32 { return dot(a, b); }

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let h = wid.x;
  let t = wid.y;
  let l = lid.x;
  let hd = p.head_dim;
  let kvh = h / (p.n_head / p.n_kv_head);
  let qb = t * p.q_stride + p.q_off + h * hd;
  for (var d = l; d < hd; d += B) { qs[d] = q[qb + d]; }
  let last = kv_last(pos[t]);
  let first = kv_first(last, p.ctx, p.window);
  let kvbase = kvh * kv_rows() * hd;
  let tb = p.seq * p.max_blocks;
  var m = -3.0e38;
  var lsum = 0.0;
  var acc4 = vec4<f32>(0.0);
  workgroupBarrier();
  for (var j0 = first; j0 <= last; j0 += B) {
    let j = j0 + l;
    let s0 = j0 % p.ctx; // the block's first slot; keys of the block wrap at most once
    let sl = kv_slot(s0 + l, p.ctx);
    var s = -3.0e38;
    if (j <= last) {
      var dot = 0.0;
      let kb = kvbase + kv_row_of(tb, sl) * hd;
      for (var d = 0u; d < hd; d += 4u) { dot += dot4(vec4<f32>(qs[d], qs[d + 1u], qs[d + 2u], qs[d + 3u]), kload4(kb + d)); }
      s = dot * p.scale;
      if (p.softcap > 0.0) { s = p.softcap * tanh(s / p.softcap); }
    }
    red[l] = s;
    workgroupBarrier();
    for (var k = B / 2u; k > 0u; k >>= 1u) {
      if (l < k) { red[l] = max(red[l], red[l + k]); }
      workgroupBarrier();
    }
    let m_new = max(m, red[0]);
    workgroupBarrier();
    var pj = 0.0;
    if (j <= last) { pj = exp(s - m_new); }
    ps[l] = pj;
    red[l] = pj;
    workgroupBarrier();
    for (var k = B / 2u; k > 0u; k >>= 1u) {
      if (l < k) { red[l] += red[l + k]; }
      workgroupBarrier();
    }
    let alpha = exp(m - m_new);
    lsum = lsum * alpha + red[0];
    m = m_new;
    let nj = min(B, last + 1u - j0);
    // thread l owns dims 4l..4l+3 (head_dim <= 512)
    if (4u * l < hd) {
      var a = acc4 * alpha;
      var sv = s0;
      for (var jj = 0u; jj < nj; jj++) {
        a += ps[jj] * vload4(kvbase + kv_row_of(tb, sv) * hd + 4u * l);
        sv += 1u;
        if (sv == p.ctx) { sv = 0u; }
      }
      acc4 = a;
    }
    workgroupBarrier();
  }
  let ob = t * p.out_stride + h * hd + 4u * l;
  if (4u * l < hd) {
    let sn = sink_norm(h, m, lsum);
    let r = acc4 * sn.x / sn.y;
    out[ob] = r.x;
    out[ob + 1u] = r.y;
    out[ob + 2u] = r.z;
    out[ob + 3u] = r.w;
  }
}
