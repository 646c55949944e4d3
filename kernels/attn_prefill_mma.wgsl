// Causal attention for prefill on subgroup matrices (op_attention_mma, the fast precision where the device grants
// f16 subgroup matrices): what attn_prefill_gqa.wgsl computes, with Q K^T and P V as 16x16x16 f16 multiply-
// accumulates into f32. q, K and V are rounded to f16 (clamped to its range) as they are staged, the scores and the
// softmax are f32, the probabilities rounded to f16 for P V. A workgroup of 4 subgroups of 32 takes 64 consecutive
// query rows (tokens) of one query head, a subgroup 16 of them; it walks the union of its tokens' key ranges in
// blocks of BK = 32 keys (as attn_prefill_gqa: slots wrap once in a ring, keys outside a token's range masked)
// twice: first for each row's largest score, then for P = exp(s - max) and its sums, so the output accumulates in
// result matrices without rescaling. Each block's scores go through the subgroup's [16][BK] corner of workgroup
// memory (the result matrices are opaque), where lane l takes row l / 2, keys 16 (l % 2)..; the probabilities go
// back as f16 for the P V multiply. Before the walk the 64 rows of q are staged where K and V go, and each subgroup
// keeps its rows as D / 16 left matrices. At the end each 16 x 16 output tile goes through workgroup memory to be
// divided by its rows' sums. head_dim D is 64 or 128 (the variant); the layouts are attention.wgsl's.
//! axis f32: KV_F16=0 | f16: KV_F16=1
//! axis _d64: D=64 D128=0 | _d128: D=128 D128=1
//! axis -: MMA=1 requires=shader-f16,subgroups,subgroup-matrix
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

const BQ = 64u;  // query rows a workgroup
const BK = 32u;  // keys a block
const D = {{D}}u;
const KS = D + 8u;  // halves a staged row (rows start in different banks)
const PS = BK + 8u; // halves a row of P
var<workgroup> kvs: array<f16, 2u * BK * KS>; // K [BK][KS], then V [BK][KS]; before the walk q [BQ][KS]
var<workgroup> ss: array<f32, 4u * 16u * BK>; // [subgroup][16][BK]: scores; at the end an output tile [16][16]
var<workgroup> ps: array<f16, 4u * 16u * PS>; // [subgroup][16][PS]: probabilities
var<workgroup> lo_hi: array<atomic<u32>, 2>;
var<workgroup> range: vec2<u32>;

fn h4(v: vec4<f32>) -> vec4<f16> { return vec4<f16>(clamp(v, vec4<f32>(-65504.0), vec4<f32>(65504.0))); }

// keys kr < nj of the block at slot s0 (wrapping once at ctx) into K's tile (which = 0) or V's (1), zeros past them
fn stage(li: u32, kvbase: u32, s0: u32, nj: u32, which: u32) {
  for (var e = li; e < BK * D / 4u; e += 128u) {
    let kr = e / (D / 4u);
    let c = e % (D / 4u);
    var v = vec4<f32>(0.0);
    if (kr < nj) {
      let at = kvbase + kv_slot(s0 + kr, p.ctx) * D + 4u * c;
      if (which == 0u) { v = kload4(at); } else { v = vload4(at); }
    }
    let h = h4(v);
    let o = which * BK * KS + kr * KS + 4u * c;
    kvs[o] = h.x;
    kvs[o + 1u] = h.y;
    kvs[o + 2u] = h.z;
    kvs[o + 3u] = h.w;
  }
}

// the scaled (and soft-capped) score
fn score(d: f32) -> f32 {
  var s = d * p.scale;
  if (p.softcap > 0.0) { s = p.softcap * tanh(s / p.softcap); }
  return s;
}

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) lane: u32) {
  let h = wid.x;
  let kvbase = (h / (p.n_head / p.n_kv_head)) * p.ctx * D;
  let t0 = wid.y * BQ;
  // q's 64 rows (a row past the last token repeats it) into the K/V tiles
  for (var e = li; e < BQ * D / 4u; e += 128u) {
    let r = e / (D / 4u);
    let c = e % (D / 4u);
    let qb = min(t0 + r, p.n_tokens - 1u) * p.q_stride + p.q_off + h * D + 4u * c;
    let v = h4(vec4<f32>(q[qb], q[qb + 1u], q[qb + 2u], q[qb + 3u]));
    let o = r * KS + 4u * c;
    kvs[o] = v.x;
    kvs[o + 1u] = v.y;
    kvs[o + 2u] = v.z;
    kvs[o + 3u] = v.w;
  }
  if (li == 0u) {
    atomicStore(&lo_hi[0], 0xFFFFFFFFu);
    atomicStore(&lo_hi[1], 0u);
  }
  workgroupBarrier();
  if (li < BQ) {
    let last = kv_last(pos[min(t0 + li, p.n_tokens - 1u)]);
    atomicMin(&lo_hi[0], kv_first(last, p.ctx, p.window));
    atomicMax(&lo_hi[1], last);
  }
  workgroupBarrier();
  if (li == 0u) { // as attn_prefill_gqa: under 2 ctx keys, whatever the positions
    let hi = atomicLoad(&lo_hi[1]);
    let lo = max(atomicLoad(&lo_hi[0]), hi - min(hi, 2u * p.ctx));
    range = vec2<u32>(lo / BK * BK, hi);
  }
  let rg = workgroupUniformLoad(&range);
  let qo = 16u * sg * KS;
  let q0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kvs, qo, false, KS);
  let q1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kvs, qo + 16u, false, KS);
  let q2 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kvs, qo + 32u, false, KS);
  let q3 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kvs, qo + 48u, false, KS);
#if D128
  let q4 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kvs, qo + 64u, false, KS);
  let q5 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kvs, qo + 80u, false, KS);
  let q6 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kvs, qo + 96u, false, KS);
  let q7 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&kvs, qo + 112u, false, KS);
#endif
  workgroupBarrier(); // every subgroup has its q before K overwrites it
  // this lane's row of the scores and its keys: row r, keys half..half + 15 of each block
  let r = lane / 2u;
  let half = 16u * (lane % 2u);
  let last = kv_last(pos[min(t0 + 16u * sg + r, p.n_tokens - 1u)]);
  let first = kv_first(last, p.ctx, p.window);
  let so = 16u * BK * sg;
  let po = 16u * PS * sg;
  var m = -3.0e38;
  for (var walk = 0u; walk < 2u; walk++) {
    var l = 0.0;
    var o0 = subgroup_matrix_result<f32, 16, 16>();
    var o1 = subgroup_matrix_result<f32, 16, 16>();
    var o2 = subgroup_matrix_result<f32, 16, 16>();
    var o3 = subgroup_matrix_result<f32, 16, 16>();
#if D128
    var o4 = subgroup_matrix_result<f32, 16, 16>();
    var o5 = subgroup_matrix_result<f32, 16, 16>();
    var o6 = subgroup_matrix_result<f32, 16, 16>();
    var o7 = subgroup_matrix_result<f32, 16, 16>();
#endif
    for (var j0 = rg.x; j0 <= rg.y; j0 += BK) {
      let s0 = j0 % p.ctx; // the block's first slot; its keys wrap at most once (a ring of >= BK slots, or linear)
      let nj = min(BK, rg.y + 1u - j0);
      stage(li, kvbase, s0, nj, 0u);
      if (walk == 1u) { stage(li, kvbase, s0, nj, 1u); }
      workgroupBarrier();
      // S [16 rows][32 keys] = q K^T: K's tile read column-major is K^T
      // from explicit zeros: a matrix declared in the loop kept the last block's sums on the H200 (call 9)
      let zero = subgroup_matrix_result<f32, 16, 16>();
      var sa = subgroupMatrixMultiplyAccumulate(q0, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 0u, true, KS), zero);
      var sb = subgroupMatrixMultiplyAccumulate(q0, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 16u * KS, true, KS), zero);
      sa = subgroupMatrixMultiplyAccumulate(q1, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 16u, true, KS), sa);
      sb = subgroupMatrixMultiplyAccumulate(q1, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 16u * KS + 16u, true, KS), sb);
      sa = subgroupMatrixMultiplyAccumulate(q2, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 32u, true, KS), sa);
      sb = subgroupMatrixMultiplyAccumulate(q2, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 16u * KS + 32u, true, KS), sb);
      sa = subgroupMatrixMultiplyAccumulate(q3, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 48u, true, KS), sa);
      sb = subgroupMatrixMultiplyAccumulate(q3, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 16u * KS + 48u, true, KS), sb);
#if D128
      sa = subgroupMatrixMultiplyAccumulate(q4, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 64u, true, KS), sa);
      sb = subgroupMatrixMultiplyAccumulate(q4, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 16u * KS + 64u, true, KS), sb);
      sa = subgroupMatrixMultiplyAccumulate(q5, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 80u, true, KS), sa);
      sb = subgroupMatrixMultiplyAccumulate(q5, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 16u * KS + 80u, true, KS), sb);
      sa = subgroupMatrixMultiplyAccumulate(q6, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 96u, true, KS), sa);
      sb = subgroupMatrixMultiplyAccumulate(q6, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 16u * KS + 96u, true, KS), sb);
      sa = subgroupMatrixMultiplyAccumulate(q7, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 112u, true, KS), sa);
      sb = subgroupMatrixMultiplyAccumulate(q7, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, 16u * KS + 112u, true, KS), sb);
#endif
      subgroupMatrixStore(&ss, so, sa, false, BK);
      subgroupMatrixStore(&ss, so + 16u, sb, false, BK);
      workgroupBarrier();
      if (walk == 0u) {
        for (var c = 0u; c < 16u; c++) {
          let j = j0 + half + c;
          if (j >= first && j <= last) { m = max(m, score(ss[so + r * BK + half + c])); }
        }
      } else {
        for (var c = 0u; c < 16u; c++) {
          let j = j0 + half + c;
          var pv = 0.0;
          if (j >= first && j <= last) { pv = exp(score(ss[so + r * BK + half + c]) - m); }
          l += pv;
          ps[po + r * PS + half + c] = f16(pv);
        }
        workgroupBarrier();
        // O [16 rows][D] += P [16][32 keys] V [32 keys][D]: V's tile read row-major
        let pa = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&ps, po, false, PS);
        let pb = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&ps, po + 16u, false, PS);
        let va = BK * KS;
        let vb = BK * KS + 16u * KS;
        o0 = subgroupMatrixMultiplyAccumulate(pa, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, va, false, KS), o0);
        o0 = subgroupMatrixMultiplyAccumulate(pb, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, vb, false, KS), o0);
        o1 = subgroupMatrixMultiplyAccumulate(pa, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, va + 16u, false, KS), o1);
        o1 = subgroupMatrixMultiplyAccumulate(pb, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, vb + 16u, false, KS), o1);
        o2 = subgroupMatrixMultiplyAccumulate(pa, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, va + 32u, false, KS), o2);
        o2 = subgroupMatrixMultiplyAccumulate(pb, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, vb + 32u, false, KS), o2);
        o3 = subgroupMatrixMultiplyAccumulate(pa, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, va + 48u, false, KS), o3);
        o3 = subgroupMatrixMultiplyAccumulate(pb, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, vb + 48u, false, KS), o3);
#if D128
        o4 = subgroupMatrixMultiplyAccumulate(pa, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, va + 64u, false, KS), o4);
        o4 = subgroupMatrixMultiplyAccumulate(pb, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, vb + 64u, false, KS), o4);
        o5 = subgroupMatrixMultiplyAccumulate(pa, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, va + 80u, false, KS), o5);
        o5 = subgroupMatrixMultiplyAccumulate(pb, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, vb + 80u, false, KS), o5);
        o6 = subgroupMatrixMultiplyAccumulate(pa, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, va + 96u, false, KS), o6);
        o6 = subgroupMatrixMultiplyAccumulate(pb, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, vb + 96u, false, KS), o6);
        o7 = subgroupMatrixMultiplyAccumulate(pa, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, va + 112u, false, KS), o7);
        o7 = subgroupMatrixMultiplyAccumulate(pb, subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&kvs, vb + 112u, false, KS), o7);
#endif
      }
      workgroupBarrier(); // the next block overwrites the tiles
    }
    if (walk == 0u) {
      m = max(m, subgroupShuffleXor(m, 1u)); // the row's two lanes
      continue;
    }
    l += subgroupShuffleXor(l, 1u);
    // each 16 x 16 output tile through the subgroup's corner: lane writes e = lane + 32 i (row e / 16, column e % 16)
    for (var dt = 0u; dt < D / 16u; dt++) {
      switch (dt) {
        case 0u: { subgroupMatrixStore(&ss, so, o0, false, 16u); }
        case 1u: { subgroupMatrixStore(&ss, so, o1, false, 16u); }
        case 2u: { subgroupMatrixStore(&ss, so, o2, false, 16u); }
#if D128
        case 3u: { subgroupMatrixStore(&ss, so, o3, false, 16u); }
        case 4u: { subgroupMatrixStore(&ss, so, o4, false, 16u); }
        case 5u: { subgroupMatrixStore(&ss, so, o5, false, 16u); }
        case 6u: { subgroupMatrixStore(&ss, so, o6, false, 16u); }
        default: { subgroupMatrixStore(&ss, so, o7, false, 16u); }
#else
        default: { subgroupMatrixStore(&ss, so, o3, false, 16u); }
#endif
      }
      workgroupBarrier();
      for (var i = 0u; i < 8u; i++) {
        let e = lane + 32u * i;
        let row = e / 16u;
        let lr = subgroupShuffle(l, 2u * row);
        let t = t0 + 16u * sg + row;
        if (t < p.n_tokens) { out[t * p.out_stride + h * D + 16u * dt + e % 16u] = ss[so + e] / lr; }
      }
      workgroupBarrier();
    }
  }
}
