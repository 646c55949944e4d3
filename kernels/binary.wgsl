// Elementwise ops on f32: out[i] = a[i] OP b[i % nb] (b broadcasts over rows when nb < n).
// OP 0 = add, 1 = mul, 2 = (a + b) * c (Gemma 4's per-layer input sum); variant "unary": a[i] = c * tanh(a[i] / c)
// (logit soft-capping) in place, no b. Variant "inplace" updates a itself (a += b), e.g. the residual stream.
//! variant f32: INPLACE=0 UNARY=0
//! variant inplace: INPLACE=1 UNARY=0
//! variant unary: INPLACE=1 UNARY=1
struct Params { n: u32, nb: u32, op: u32, c: f32 };
@group(0) @binding(0) var<uniform> p: Params;
#if INPLACE
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
#ifnot UNARY
@group(0) @binding(2) var<storage, read> b: array<f32>;
#endif
#else
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
#endif

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let stride = nwg.x * 256u;
  for (var i = gid.x + gid.y * stride; i < p.n; i += stride * nwg.y) {
#if UNARY
    // tanh saturates to +-1 in f32 beyond 10; the clamp keeps an implementation's exp from overflowing
    a[i] = p.c * tanh(clamp(a[i] / p.c, -10.0, 10.0));
#else
    let y = b[i % p.nb];
    var r: f32;
    if (p.op == 0u) { r = a[i] + y; } else if (p.op == 1u) { r = a[i] * y; } else { r = (a[i] + y) * p.c; }
#if INPLACE
    a[i] = r;
#else
    out[i] = r;
#endif
#endif
  }
}
