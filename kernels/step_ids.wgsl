// The input ids of a batched decode step (op_step_ids), so that a step can be queued before the step it follows was
// read back (two batched steps in flight): for i < rows,
//   ids[i] = src[i] & 0x7fffffff                          where src[i] has its top bit set (an id the CPU knows),
//            prev[min(src[i], slots - 1) * stride]          otherwise (the id the step before sampled for its row
//                                                           src[i], still on the GPU),
//            0                                             for n <= i < rows (the padding rows).
//! variant u32: X=0
struct Params { n: u32, rows: u32, stride: u32, slots: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;  // [n]
@group(0) @binding(2) var<storage, read> prev: array<u32>; // [slots][stride]: row r's id at r * stride
@group(0) @binding(3) var<storage, read_write> ids: array<u32>; // [rows]

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  if (i >= p.rows) { return; }
  var v = 0u;
  if (i < p.n) {
    let s = src[i];
    if (s >= 0x80000000u) {
      v = s & 0x7fffffffu;
    } else {
      v = prev[min(s, p.slots - 1u) * p.stride];
    }
  }
  ids[i] = v;
}
