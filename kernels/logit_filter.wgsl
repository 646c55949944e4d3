// The logit filter before the sampler (op_logit_mask, op_logit_bias): constrained decoding's token mask and the
// request's logit bias, applied in place where the logits are, so the sampler's draw never sees a token the grammar
// forbids. mask: logits[i] = -inf where bit (i & 31) of mask[i >> 5] is clear, for i < n. bias: logits[id] +=
// bias for each of n_bias (id, f32 bits) pairs whose id < n (ids are distinct: one invocation per pair).
//! variant mask: BIAS=0
//! variant bias: BIAS=1
struct Params { n: u32, n_bias: u32, neg_inf: u32, _p1: u32 }; // neg_inf: 0xff800000 (no constant -inf in WGSL)
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;
#if BIAS
@group(0) @binding(2) var<storage, read> pairs: array<u32>; // [n_bias][2]: id, bias as f32 bits
#else
@group(0) @binding(2) var<storage, read> mask: array<u32>;  // [ceil(n / 32)]
#endif

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let stride = nwg.x * 256u;
#if BIAS
  for (var k = gid.x; k < p.n_bias; k += stride) {
    let id = pairs[2u * k];
    if (id < p.n) {
      logits[id] = logits[id] + bitcast<f32>(pairs[2u * k + 1u]);
    }
  }
#else
  for (var i = gid.x; i < p.n; i += stride) {
    if ((mask[i >> 5u] & (1u << (i & 31u))) == 0u) {
      logits[i] = bitcast<f32>(p.neg_inf);
    }
  }
#endif
}
