// Mixture-of-experts token lists on the GPU (src/ops/op_moe.c: op_moe_lists, op_moe_indirect), one workgroup.
// "lists": from the router's ids [T][k] (np = T * k pairs; pair q = t * k + j is token t's slot j; ids past E - 1
// clamped to it) fills the lists buffer L (u32 words, the sections at the word offsets of Params, op_moe_lists_words):
//   L[0]                      tiles: how many tiles of TM pairs the grouped GEMM has (the sum of ceil(count_e / TM))
//   L[off_cnt + e]            count_e: the pairs routed to expert e                                  [E]
//   L[off_off + e]            offset_e: the exclusive prefix sum of the counts, L[off_off + E] = np   [E + 1]
//   L[off_ent + offset_e + r] the r-th pair (ascending) routed to expert e                           [np]
//   L[off_tile + 2 i]         tile i: its expert, then (+ 1) the index in the entries of its first pair
//                             (tiles in expert order, TM pairs each but an expert's last)           [max_tiles][2]
// Every list is in ascending pair order (deterministic, what the CPU reference writes); see main below.
// "indirect": per-expert dispatch arguments from those lists, ind[e] = (gx, ceil(count_e / TM), 1), or (1, 1, 1) for
// an expert without pairs (a grid is never 0: its one workgroup finds no rows and exits).
//! variant lists: IND=0
//! variant indirect: IND=1
struct Params { np: u32, E: u32, TM: u32, gx: u32, off_cnt: u32, off_off: u32, off_ent: u32, off_tile: u32 };
@group(0) @binding(0) var<uniform> p: Params;
#if IND
@group(0) @binding(1) var<storage, read> L: array<u32>;
@group(0) @binding(2) var<storage, read_write> ind: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let e = gid.x;
  if (e >= p.E) { return; }
  let c = L[p.off_off + e + 1u] - L[p.off_off + e];
  ind[3u * e] = select(1u, p.gx, c > 0u);
  ind[3u * e + 1u] = max(1u, (c + p.TM - 1u) / p.TM);
  ind[3u * e + 2u] = 1u;
}
#else
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> L: array<u32>;

const NONE = 0xffffffffu;
var<workgroup> chunk: array<u32, 256>;          // the experts of a chunk's 256 pairs (NONE past np)
var<workgroup> cnt: array<atomic<u32>, 256>;    // pairs an expert
var<workgroup> offs: array<u32, 256>;           // where an expert's pairs start in the entries
var<workgroup> toffs: array<u32, 256>;          // where an expert's tiles start in the tile table
var<workgroup> listed: array<atomic<u32>, 256>; // pairs an expert has in the chunks before this one
var<workgroup> seg: array<u32, 2048>;           // [8 segments][256]: pairs of expert e in segment g of the chunk
                                                // (0 but where this chunk's segment holds e)

// Thread i counts its pairs i, i + 256, .. into cnt (workgroup atomics); thread 0 sums them up. The entries then go
// chunk by chunk of 256 pairs, each split in 8 segments of 32: pair i's place in its expert's list is what the
// earlier chunks listed, plus the expert's pairs in the chunk's earlier segments (seg, written by each expert's last
// pair in a segment), plus those before i in its own segment (at most 31 compared): ascending pair order, the CPU
// reference's words, with three barriers a chunk instead of a pass over all np pairs a thread.
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u) {
  let i = lid.x;
  atomicStore(&cnt[i], 0u);
  atomicStore(&listed[i], 0u);
  for (var g = 0u; g < 8u; g++) { seg[g * 256u + i] = 0u; }
  workgroupBarrier();
  for (var q = i; q < p.np; q += 256u) { atomicAdd(&cnt[min(ids[q], p.E - 1u)], 1u); }
  workgroupBarrier();
  if (i == 0u) {
    var o = 0u;
    var to = 0u;
    for (var e = 0u; e < p.E; e++) {
      let c = atomicLoad(&cnt[e]);
      offs[e] = o;
      toffs[e] = to;
      L[p.off_cnt + e] = c;
      L[p.off_off + e] = o;
      o += c;
      to += (c + p.TM - 1u) / p.TM;
    }
    L[p.off_off + p.E] = o;
    L[0] = to;
  }
  for (var base = 0u; base < p.np; base += 256u) {
    let n = min(256u, p.np - base);
    var x = NONE;
    if (i < n) { x = min(ids[base + i], p.E - 1u); }
    chunk[i] = x;
    workgroupBarrier(); // (the first: also offs and toffs written)
    let g = i / 32u;
    var before = 0u; // pairs of x before i in its segment
    var last = true; // none after i in it
    if (i < n) {
      for (var j = 32u * g; j < min(32u * g + 32u, n); j++) {
        if (chunk[j] == x) {
          if (j < i) { before++; }
          if (j > i) { last = false; }
        }
      }
      if (last) { seg[g * 256u + x] = before + 1u; }
    }
    workgroupBarrier();
    if (i < n) {
      var prior = 0u;
      for (var h = 0u; h < g; h++) { prior += seg[h * 256u + x]; }
      L[p.off_ent + offs[x] + atomicLoad(&listed[x]) + prior + before] = base + i;
    }
    workgroupBarrier();
    if (i < n && last) { // each expert's segment count into listed, then cleared for the next chunk
      atomicAdd(&listed[x], before + 1u);
      seg[g * 256u + x] = 0u;
    }
  }
  workgroupBarrier();
  if (i < p.E) {
    let c = atomicLoad(&cnt[i]);
    let nt = (c + p.TM - 1u) / p.TM;
    for (var t = 0u; t < nt; t++) {
      L[p.off_tile + 2u * (toffs[i] + t)] = i;
      L[p.off_tile + 2u * (toffs[i] + t) + 1u] = offs[i] + t * p.TM;
    }
  }
}
#endif
