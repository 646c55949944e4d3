// Row softmax over the last dimension with an input scale: out[r, i] = exp(s*x[r,i] - m) / sum.
// One workgroup per row; max and sum reduced in workgroup memory.
//! variant f32: X=0
struct Params { n: u32, rows: u32, scale: f32, _p: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.n;
  var m = -3.402823e38;
  for (var i = lid.x; i < p.n; i += 256u) { m = max(m, p.scale * x[base + i]); }
  red[lid.x] = m;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (lid.x < k) { red[lid.x] = max(red[lid.x], red[lid.x + k]); }
    workgroupBarrier();
  }
  m = red[0];
  workgroupBarrier();
  var s = 0.0;
  for (var i = lid.x; i < p.n; i += 256u) { s += exp(p.scale * x[base + i] - m); }
  red[lid.x] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (lid.x < k) { red[lid.x] += red[lid.x + k]; }
    workgroupBarrier();
  }
  let inv = 1.0 / red[0];
  for (var i = lid.x; i < p.n; i += 256u) { out[base + i] = exp(p.scale * x[base + i] - m) * inv; }
}
