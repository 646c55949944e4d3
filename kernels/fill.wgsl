// Constant fill (a GPU ConstantOfShape): out[i] = value for i < n. The value is passed as raw 32-bit
// pattern, so it fills f32 or u32 tensors alike; never fill a tensor from the CPU inside a step.
//! variant u32: X=0
struct Params { n: u32, bits: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let stride = nwg.x * 256u;
  for (var i = gid.x + gid.y * stride; i < p.n; i += stride * nwg.y) {
    out[i] = p.bits;
  }
}
