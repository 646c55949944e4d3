// Elementwise binary ops on f32: out[i] = a[i] OP b[i % nb] (b broadcasts over rows when nb < n).
// OP 0 = add, 1 = mul. out may alias neither input (WebGPU forbids writable aliasing in one dispatch).
//! variant f32: X=0
struct Params { n: u32, nb: u32, op: u32, _p: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let stride = nwg.x * 256u;
  for (var i = gid.x + gid.y * stride; i < p.n; i += stride * nwg.y) {
    let y = b[i % p.nb];
    if (p.op == 0u) { out[i] = a[i] + y; } else { out[i] = a[i] * y; }
  }
}
