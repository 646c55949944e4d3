// The verdict of a speculative verify step (op_spec_accept): rows 0..k fed ids[0] (the last token) and the drafts
// ids[1..k], and row i's sampler picked sampled[i * stride]. The drafts are accepted while each equals what the row
// before sampled: a = the count of leading i < k with sampled[i * stride] == ids[i + 1]. Then
//   result[0] = a, result[1 + i] = sampled[i * stride] for i <= k (the tokens: the first a + 1 are the output),
//   state[j] = snap[a * snap_stride + j] for j < words (the sampler's state as it was after row a, which row a + 1
//              on advanced past),
//   next[0] = sampled[a * stride] (the next step's input id).
// One workgroup; k <= 63.
//! variant u32: X=0
struct Params { k: u32, stride: u32, words: u32, snap_stride: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;     // [k + 1]
@group(0) @binding(2) var<storage, read> sampled: array<u32>; // [k + 1][stride]
@group(0) @binding(3) var<storage, read> snap: array<u32>;    // [k + 1][snap_stride]
@group(0) @binding(4) var<storage, read_write> result: array<u32>; // [k + 2]
@group(0) @binding(5) var<storage, read_write> state: array<u32>;  // [words]
@group(0) @binding(6) var<storage, read_write> next: array<u32>;   // [1]

var<workgroup> accepted: u32;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32) {
  if (li == 0u) {
    var a = 0u;
    while (a < p.k && sampled[a * p.stride] == ids[a + 1u]) { a++; }
    accepted = a;
    result[0] = a;
    for (var i = 0u; i <= p.k; i++) { result[1u + i] = sampled[i * p.stride]; }
    next[0] = sampled[a * p.stride];
  }
  workgroupBarrier();
  let a = accepted;
  for (var j = li; j < p.words; j += 256u) {
    state[j] = snap[a * p.snap_stride + j];
  }
}
