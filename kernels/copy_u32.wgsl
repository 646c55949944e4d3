// Word copy (op_copy_u32): dst[i] = src[i] for i < n, 32-bit words of any type. A recording's snapshot of a small
// GPU-side state (the sampler's, between a verify step's rows: op_spec_accept restores one of them).
//! variant u32: X=0
struct Params { n: u32, _p0: u32, _p1: u32, _p2: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  for (var i = gid.x; i < p.n; i += nwg.x * 256u) {
    dst[i] = src[i];
  }
}
