// Elementwise binary ops on f32: out[i] = a[i] OP b[i % nb] (b broadcasts over rows when nb < n).
// OP 0 = add, 1 = mul. Variant "inplace" updates a itself (a += b), e.g. the residual stream.
//! variant f32: INPLACE=0
//! variant inplace: INPLACE=1
struct Params { n: u32, nb: u32, op: u32, _p: u32 };
@group(0) @binding(0) var<uniform> p: Params;
#if INPLACE
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
#else
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
#endif

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let stride = nwg.x * 256u;
  for (var i = gid.x + gid.y * stride; i < p.n; i += stride * nwg.y) {
    let y = b[i % p.nb];
    var r: f32;
    if (p.op == 0u) { r = a[i] + y; } else { r = a[i] * y; }
#if INPLACE
    a[i] = r;
#else
    out[i] = r;
#endif
  }
}
