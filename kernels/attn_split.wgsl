// Flash-decoding, pass 1: attention of one new token, split over the cached sequence. Workgroup (kvh, c)
// takes keys [c*B, c*B+B) of KV head kvh for all n_rep query heads that share it (GQA: K/V are read once for
// the group), keeping per head the chunk's max m, sum l and unnormalised output acc. Keys run to pos[0] (the
// token's position), starting at pos-window+1 with a sliding window; key j is in slot j % ctx (a ring of at
// least 128 slots holding the window, or a linear cache with every j < ctx). Chunks past the end exit at once (the
// grid is the worst case of the recording's length bucket) or are never launched (indirect grid).
// The chunk length B (32, 64 or 128) is chosen per bucket so that short contexts still spread over many
// workgroups. Phases: scores of every (head, key) pair; max and sum per head by NP = WG / n_rep_pow2 threads
// each (a few workgroup barriers in all, not a reduction tree per head); outputs with one thread per
// (head, 4 dims), each running over the chunk's keys (no reduction). The score and output loops keep eight cache
// loads in flight a thread rather than one (1-11% off the split + reduce pair on an H100, PERF.md: the loads were
// not most of the pass's time). WG, the workgroup's threads, is 256 where a phase has 256 or more items (n_rep * B
// scores or n_rep * head_dim / 4 outputs: Qwen3's 8 heads a group, 32 keys a chunk), else 128: a short context's
// few workgroups each take one round a phase instead of two, and the pass's time is its longest workgroup's
// (Qwen3-30B-A3B's decode at 128 233.1 / 234.2 -> 240.4 tok/s, gpt-oss-20b's 352.5 -> 356.6: H100, PERF.md call 27).
// partial: [n_kv_head][max_chunks][n_rep][head_dim + 2] (acc..., m, l). head_dim % 4 == 0,
// n_rep <= 16, n_rep * head_dim <= 4096.
// Variants "sg": the max and sum of a head are one subgroupMax / subgroupAdd when a head's NP threads are
// exactly one subgroup (the op checks it), with no workgroup barriers.
// Variants "rope" also do what rope_kv.wgsl did before them, so the decode step needs no dispatch for it: q is
// rotated as it is loaded (every workgroup rotates its group's heads, which is cheap), and the workgroup whose
// chunk holds the token's own position rotates the token's K head and writes it and the V head to the caches,
// keeping both in workgroup memory (kn, vn: the cache's form) for its own score and output of that key, so that no
// thread reads back what another wrote (heads over 512 wide read them back after a storage barrier).
// cs: [max_pos][rot/2] (cos, sin); K at k_off, V at v_off of q's buffer, or of
// vsrc when v_in_q is 0 (after Qwen3's per-head norms q and k live in another buffer than v).
// Variants "ropeqkn" also do the per-head RMSNorms of q and k before RoPE (Qwen3's and Gemma 3's q_norm and k_norm,
// weights qnw and knw [head_dim] + w_offset), so the decode step needs no norm dispatch either: every workgroup
// norms its group's q heads as it loads them, the appending one the token's K head too (v as it is).
//! axis f32: KV_F16=0 | f16: KV_F16=1
//! axis -: SG=0 | sg: SG=1 requires=subgroups
// Variants "paged" attend for n_seq sequences at once, one new token each (the batched decode step of many
// sequences): workgroup (kvh, c, s) takes chunk c of sequence s, whose new token is at pos[s], its q at
// q[s*q_stride + q_off ...] (with ROPE its K at s*q_stride + k_off and V at s*v_stride + v_off). The caches are a
// pool shared by every sequence, [n_kv_head][n_blocks * block][head_dim]; a sequence's logical slot sl (< ctx, the
// slots one sequence may use: its ring for a window, else its longest length) is in physical block
// table[s*max_blocks + sl / block] at sl % block, the block ids clamped into the pool whatever the table holds.
// partial gets one [n_kv_head][max_chunks][n_rep][head_dim + 2] block per sequence.
//! axis -: ROPE=0 | rope: ROPE=1 KV_RW=1 | ropeqkn: ROPE=1 KV_RW=1 QKN=1
//! axis -: PAGED=0 | paged: PAGED=1
struct Params { n_head: u32, n_kv_head: u32, head_dim: u32, ctx: u32,
                q_stride: u32, q_off: u32, window: u32, max_chunks: u32,
                scale: f32, softcap: f32, rot_dim: u32, mode: u32,
                max_pos: u32, k_off: u32, v_off: u32, v_in_q: u32,
                max_blocks: u32, block: u32, n_blocks: u32, v_stride: u32,
                eps: f32, w_offset: f32, pad0: u32, pad1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
#include "lib/kv_load.wgsli"
#include "lib/kv_range.wgsli"
@group(0) @binding(4) var<storage, read> pos: array<u32>;
@group(0) @binding(5) var<storage, read_write> partial: array<f32>;
#if ROPE
@group(0) @binding(6) var<storage, read> cs: array<vec2<f32>>;
@group(0) @binding(7) var<storage, read> vsrc: array<f32>;
#if PAGED
@group(0) @binding(8) var<storage, read> table: array<u32>;
#endif
#if QKN
#if PAGED
@group(0) @binding(9) var<storage, read> qnw: array<f32>;
@group(0) @binding(10) var<storage, read> knw: array<f32>;
#else
@group(0) @binding(8) var<storage, read> qnw: array<f32>;
@group(0) @binding(9) var<storage, read> knw: array<f32>;
#endif
const KSLOT = 16u;                    // hn's slot of the K head (q heads 0 .. n_rep - 1)
var<workgroup> hn: array<f32, 17>;    // 1 / rms of each q head of the group and of the token's K head
#endif

// Element i of the head at q[base]: RMS-normed (QKN) as head slot h of hn, with the k norm's weight for KSLOT
fn qe(base: u32, i: u32, h: u32) -> f32 {
#if QKN
  return q[base + i] * hn[h] * (select(qnw[i], knw[i], h == KSLOT) + p.w_offset);
#else
  return q[base + i];
#endif
}

// Elements d .. d + 3 of the head at q[base], as qe
fn qe4(base: u32, d: u32, h: u32) -> vec4<f32> {
  return vec4<f32>(qe(base, d, h), qe(base, d + 1u, h), qe(base, d + 2u, h), qe(base, d + 3u, h));
}

// Dims 4*d4 .. 4*d4+3 of the head at q[base] (its norm slot h), rotated for position at (half-split: pairs i,
// i + rot/2; adjacent: 2i, 2i+1); dims past rot_dim as they are. The same products as rope_kv.wgsl.
fn rope4(base: u32, d4: u32, at: u32, h: u32) -> vec4<f32> {
  let d = 4u * d4;
  let v = qe4(base, d, h);
  if (d >= p.rot_dim) { return v; }
  let half = p.rot_dim / 2u;
  if (p.mode == 0u && half % 4u == 0u) {
    // half-split with the halves in whole vec4s: the partner vec4 and the four angles loaded at once, no branch
    // around a load
    let lo = d < half;
    let pv = qe4(base, select(d - half, d + half, lo), h);
    let cb = at * half + select(d - half, d, lo);
    let c0 = cs[cb];
    let c1 = cs[cb + 1u];
    let c2 = cs[cb + 2u];
    let c3 = cs[cb + 3u];
    return v * vec4<f32>(c0.x, c1.x, c2.x, c3.x) + select(pv, -pv, lo) * vec4<f32>(c0.y, c1.y, c2.y, c3.y);
  }
  if (p.mode == 0u) { // a vec4 may straddle the halves (rot_dim / 2 of 4k + 2)
    var o = v;
    for (var k = 0u; k < 4u; k++) {
      let dd = d + k;
      if (dd < half) {
        let c = cs[at * half + dd];
        o[k] = v[k] * c.x - qe(base, dd + half, h) * c.y;
      } else {
        let c = cs[at * half + dd - half];
        o[k] = v[k] * c.x + qe(base, dd - half, h) * c.y;
      }
    }
    return o;
  }
  let c0 = cs[at * half + d / 2u];
  let c1 = cs[at * half + d / 2u + 1u];
  return vec4<f32>(v.x * c0.x - v.y * c0.y, v.y * c0.x + v.x * c0.y, v.z * c1.x - v.w * c1.y, v.w * c1.x + v.z * c1.y);
}
#else
#if PAGED
@group(0) @binding(6) var<storage, read> table: array<u32>;
#endif
#endif
#include "lib/kv_page.wgsli"

override B: u32 = 128u;
override WG: u32 = 128u;                   // threads a workgroup: 128 or 256 (the op picks)
var<workgroup> qs: array<vec4<f32>, 1024>; // [n_rep][head_dim / 4]
var<workgroup> ps: array<f32, 2048>;       // [n_rep][B] scores, then probabilities (n_rep * B <= 2048)
var<workgroup> red: array<f32, 256>;       // [n_rep_pow2][NP] partial max / sum
#if ROPE
const KN = 128u;                           // the widest head (in vec4s) kn and vn take
var<workgroup> kn: array<kv4, 128>;        // the token's K head (rotated) and V head as the caches hold them,
var<workgroup> vn: array<kv4, 128>;        // for the workgroup that appends them
#endif

// q_r . k for the group's q head at qs[qb] and the key at cache element kb, eight of the key's loads in flight at a
// time
fn qk_dot(qb: u32, kb: u32, hd4: u32) -> f32 {
  var a = vec4<f32>(0.0);
  var a1 = vec4<f32>(0.0);
  var d4 = 0u;
  while (d4 + 8u <= hd4) {
    let e = kb + 4u * d4;
    let k0 = kload4(e);
    let k1 = kload4(e + 4u);
    let k2 = kload4(e + 8u);
    let k3 = kload4(e + 12u);
    let k4 = kload4(e + 16u);
    let k5 = kload4(e + 20u);
    let k6 = kload4(e + 24u);
    let k7 = kload4(e + 28u);
    let q = qb + d4;
    a += qs[q] * k0 + qs[q + 1u] * k1 + qs[q + 2u] * k2 + qs[q + 3u] * k3;
    a1 += qs[q + 4u] * k4 + qs[q + 5u] * k5 + qs[q + 6u] * k6 + qs[q + 7u] * k7;
    d4 += 8u;
  }
  while (d4 < hd4) {
    a += qs[qb + d4] * kload4(kb + 4u * d4);
    d4 += 1u;
  }
  return dot(a + a1, vec4<f32>(1.0));
}

// The cache row (times hd) of the chunk's key jj from its first slot s0, key nc - 1 for jj past it
fn v_row(tb: u32, s0: u32, jj: u32, nc: u32, hd: u32) -> u32 {
  return kv_row_of(tb, kv_slot(s0 + min(jj, nc - 1u), p.ctx)) * hd;
}

// Key jj's probability in ps from pb, 0 from nc on
fn pw(pb: u32, jj: u32, nc: u32) -> f32 { return select(0.0, ps[pb + jj], jj < nc); }
#if ROPE

// q_r . k for the token's own key, from kn
fn own_dot(qb: u32, hd4: u32) -> f32 {
  var a = vec4<f32>(0.0);
  for (var d4 = 0u; d4 < hd4; d4++) { a += qs[qb + d4] * kv_unpack4(kn[d4]); }
  return dot(a, vec4<f32>(1.0));
}
#endif

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let l = lid.x;
  let kvh = wid.x;
  let c = wid.y;
  let sq = wid.z; // the sequence (0 unless paged)
  let hd = p.head_dim;
  let hd4 = hd / 4u;
  let n_rep = p.n_head / p.n_kv_head;
  let nr = kv_rows();
  let tb = sq * p.max_blocks; // the sequence's block table (paged)
  let qo = p.q_off + sq * p.q_stride;
  let at = pos[sq];
  let last = kv_last(at);
  let first = kv_first(last, p.ctx, p.window);
  let j0 = (first / B) * B + c * B; // chunks are aligned to B from the window's first block
  if (j0 > last || c >= p.max_chunks) { return; } // past the end (or the partials): nothing to do, never read
  let nj = min(B, last + 1u - j0);
  let s0 = j0 % p.ctx; // the chunk's first slot; its keys wrap at most once
#if ROPE
#if QKN
  // each head's 1 / rms, the group's q heads and the token's K head (the last row): a vec4's squares a thread in
  // ps, then one thread a head sums its hd4
  for (var i = l; i < (n_rep + 1u) * hd4; i += WG) {
    let h = i / hd4;
    let b = select(qo + (kvh * n_rep + h) * hd, sq * p.q_stride + p.k_off + kvh * hd, h == n_rep) + 4u * (i % hd4);
    let v = vec4<f32>(q[b], q[b + 1u], q[b + 2u], q[b + 3u]);
    ps[i] = dot(v, v);
  }
  workgroupBarrier();
  if (l <= n_rep) {
    var ss = 0.0;
    for (var d4 = 0u; d4 < hd4; d4++) { ss += ps[l * hd4 + d4]; }
    hn[select(l, KSLOT, l == n_rep)] = inverseSqrt(ss / f32(hd) + p.eps);
  }
  workgroupBarrier();
#endif
  let rpos = min(at, p.max_pos - 1u);
  for (var i = l; i < n_rep * hd4; i += WG) {
    qs[i] = rope4(qo + (kvh * n_rep + i / hd4) * hd, i % hd4, rpos, i / hd4);
  }
  // the new token's K and V go into the cache here, by the workgroup that reads that position; that workgroup
  // takes them from kn / vn below (no storage barrier, and no read-back, between its threads), or from the caches
  // after a storage barrier when a head is too wide for kn / vn
  let own = last < j0 + B && hd4 <= KN;
  if (last < j0 + B) {
    let dst = (kvh * nr + kv_row_of(tb, at % p.ctx)) * hd;
    for (var d4 = l; d4 < hd4; d4 += WG) {
      let k = rope4(sq * p.q_stride + p.k_off + kvh * hd, d4, rpos, 16u);
      kstore4(dst + 4u * d4, k);
      let vb = select(sq * p.v_stride, sq * p.q_stride, p.v_in_q != 0u) + p.v_off + kvh * hd + 4u * d4;
      var v = vec4<f32>(vsrc[vb], vsrc[vb + 1u], vsrc[vb + 2u], vsrc[vb + 3u]);
      if (p.v_in_q != 0u) { v = vec4<f32>(q[vb], q[vb + 1u], q[vb + 2u], q[vb + 3u]); }
      vstore4(dst + 4u * d4, v);
      if (own) {
        kn[d4] = kv_pack4(k);
        vn[d4] = kv_pack4(v);
      }
    }
  }
  if (hd4 > KN) { storageBarrier(); }
#else
  let own = false;
  for (var i = l; i < n_rep * hd4; i += WG) {
    let r = i / hd4;
    let d4 = i % hd4;
    let qb = qo + (kvh * n_rep + r) * hd + 4u * d4;
    qs[i] = vec4<f32>(q[qb], q[qb + 1u], q[qb + 2u], q[qb + 3u]);
  }
#endif
  workgroupBarrier();
  // scores of every (head r, key j) pair of the chunk
  for (var i = l; i < n_rep * B; i += WG) {
    let r = i / B;
    let j = j0 + i % B;
    var s = -3.0e38;
    if (j >= first && j <= last) {
      let sl = kv_slot(s0 + i % B, p.ctx);
#if ROPE
      if (own && j == last) {
        s = own_dot(r * hd4, hd4) * p.scale;
      } else {
        s = qk_dot(r * hd4, (kvh * nr + kv_row_of(tb, sl)) * hd, hd4) * p.scale;
      }
#else
      s = qk_dot(r * hd4, (kvh * nr + kv_row_of(tb, sl)) * hd, hd4) * p.scale;
#endif
      if (p.softcap > 0.0) { s = p.softcap * tanh(s / p.softcap); }
    }
    ps[i] = s;
  }
  workgroupBarrier();
  // max and sum per head: NP threads a head, each over B / NP keys, then a tree over the NP
  var rp = 1u;
  while (rp < n_rep) { rp *= 2u; }
  let np = WG / rp;
  let r = l / np;
  let t = l % np;
  var m = -3.0e38;
  if (r < n_rep) {
    for (var j = t; j < B; j += np) { m = max(m, ps[r * B + j]); }
  }
#if SG
  m = subgroupMax(m);
#else
  red[l] = m;
  workgroupBarrier();
  for (var k = np / 2u; k > 0u; k >>= 1u) {
    if (t < k) { red[l] = max(red[l], red[l + k]); }
    workgroupBarrier();
  }
  m = red[l - t];
  workgroupBarrier();
#endif
  var sm = 0.0;
  if (r < n_rep) {
    for (var j = t; j < B; j += np) {
      var pj = 0.0;
      if (j < nj && j0 + j >= first) { pj = exp(ps[r * B + j] - m); }
      ps[r * B + j] = pj;
      sm += pj;
    }
  }
#if SG
  sm = subgroupAdd(sm);
  workgroupBarrier(); // the probabilities in ps are read by other threads below
#else
  red[l] = sm;
  workgroupBarrier();
  for (var k = np / 2u; k > 0u; k >>= 1u) {
    if (t < k) { red[l] += red[l + k]; }
    workgroupBarrier();
  }
  sm = red[l - t];
#endif
  let out_base = (((sq * p.n_kv_head + kvh) * p.max_chunks + c) * n_rep) * (hd + 2u);
  if (t == 0u && r < n_rep) {
    partial[out_base + r * (hd + 2u) + hd] = m;
    partial[out_base + r * (hd + 2u) + hd + 1u] = sm;
  }
  // unnormalised outputs: one thread per (head, 4 dims) over the chunk's keys, eight keys' V loads in flight at a
  // time; keys from nc (the keys read from the cache: all nj, or all but the token's own, last, from vn) to the next
  // multiple of 8 (< B, since B is a multiple of 8) read key nc - 1 again with weight 0
  let vb = kvh * nr * hd;
  for (var i = l; i < n_rep * hd4; i += WG) {
    let rr = i / hd4;
    let d4 = i % hd4;
    let pb = rr * B;
    let e = vb + 4u * d4;
    var a = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    let nc = select(nj, nj - 1u, own);
    for (var j = 0u; j < nc; j += 8u) {
      let v0 = vload4(e + v_row(tb, s0, j, nc, hd));
      let v1 = vload4(e + v_row(tb, s0, j + 1u, nc, hd));
      let v2 = vload4(e + v_row(tb, s0, j + 2u, nc, hd));
      let v3 = vload4(e + v_row(tb, s0, j + 3u, nc, hd));
      let v4 = vload4(e + v_row(tb, s0, j + 4u, nc, hd));
      let v5 = vload4(e + v_row(tb, s0, j + 5u, nc, hd));
      let v6 = vload4(e + v_row(tb, s0, j + 6u, nc, hd));
      let v7 = vload4(e + v_row(tb, s0, j + 7u, nc, hd));
      a += pw(pb, j, nc) * v0 + pw(pb, j + 1u, nc) * v1 + pw(pb, j + 2u, nc) * v2 + pw(pb, j + 3u, nc) * v3;
      a1 += pw(pb, j + 4u, nc) * v4 + pw(pb, j + 5u, nc) * v5 + pw(pb, j + 6u, nc) * v6 + pw(pb, j + 7u, nc) * v7;
    }
    a += a1;
#if ROPE
    if (own) { a += ps[pb + nj - 1u] * kv_unpack4(vn[d4]); }
#endif
    let ob = out_base + rr * (hd + 2u) + 4u * d4;
    partial[ob] = a.x;
    partial[ob + 1u] = a.y;
    partial[ob + 2u] = a.z;
    partial[ob + 3u] = a.w;
  }
}
