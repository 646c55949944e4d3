// Mixture-of-experts token lists on the GPU (src/ops/op_moe.c: op_moe_lists, op_moe_indirect), one workgroup.
// "lists": from the router's ids [T][k] (np = T * k pairs; pair q = t * k + j is token t's slot j; ids past E - 1
// clamped to it) fills the lists buffer L (u32 words, the sections at the word offsets of Params, op_moe_lists_words):
//   L[0]                      tiles: how many tiles of TM pairs the grouped GEMM has (the sum of ceil(count_e / TM))
//   L[off_cnt + e]            count_e: the pairs routed to expert e                                  [E]
//   L[off_off + e]            offset_e: the exclusive prefix sum of the counts, L[off_off + E] = np   [E + 1]
//   L[off_ent + offset_e + r] the r-th pair (ascending) routed to expert e                           [np]
//   L[off_tile + 2 i]         tile i: its expert, then (+ 1) the index in the entries of its first pair
//                             (tiles in expert order, TM pairs each but an expert's last)           [max_tiles][2]
// Thread e counts and lists expert e's pairs by scanning the ids a chunk of 256 at a time from workgroup memory, so
// every list is in ascending pair order (deterministic, what the CPU reference writes).
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

var<workgroup> chunk: array<u32, 256>;
var<workgroup> cnt: array<u32, 256>;
var<workgroup> offs: array<u32, 256>;
var<workgroup> toffs: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u) {
  let e = lid.x;
  var c = 0u;
  for (var base = 0u; base < p.np; base += 256u) {
    if (base + e < p.np) { chunk[e] = min(ids[base + e], p.E - 1u); }
    workgroupBarrier();
    let n = min(256u, p.np - base);
    for (var i = 0u; i < n; i++) { c += select(0u, 1u, chunk[i] == e); }
    workgroupBarrier();
  }
  cnt[e] = c;
  workgroupBarrier();
  if (e == 0u) {
    var o = 0u;
    var to = 0u;
    for (var i = 0u; i < p.E; i++) {
      offs[i] = o;
      toffs[i] = to;
      L[p.off_cnt + i] = cnt[i];
      L[p.off_off + i] = o;
      o += cnt[i];
      to += (cnt[i] + p.TM - 1u) / p.TM;
    }
    L[p.off_off + p.E] = o;
    L[0] = to;
  }
  workgroupBarrier();
  var pos = 0u;
  if (e < p.E) { pos = offs[e]; }
  for (var base = 0u; base < p.np; base += 256u) {
    if (base + e < p.np) { chunk[e] = min(ids[base + e], p.E - 1u); }
    workgroupBarrier();
    let n = min(256u, p.np - base);
    for (var i = 0u; i < n; i++) {
      if (chunk[i] == e) {
        L[p.off_ent + pos] = base + i;
        pos++;
      }
    }
    workgroupBarrier();
  }
  if (e < p.E) {
    let nt = (c + p.TM - 1u) / p.TM;
    for (var i = 0u; i < nt; i++) {
      L[p.off_tile + 2u * (toffs[e] + i)] = e;
      L[p.off_tile + 2u * (toffs[e] + i) + 1u] = offs[e] + i * p.TM;
    }
  }
}
#endif
