// Row argmax: out[r] = index of the largest x[r, i] (lowest index on ties; NaN never wins).
//! variant f32: X=0
struct Params { n: u32, rows: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

var<workgroup> bv: array<f32, 256>;
var<workgroup> bi: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let row = wid.x;
  if (row >= p.rows) { return; }
  let base = row * p.n;
  var best = -3.402823e38;
  var besti = 0xffffffffu;
  for (var i = lid.x; i < p.n; i += 256u) {
    let v = x[base + i];
    if (v > best || (besti == 0xffffffffu && v == best)) { best = v; besti = i; }
  }
  bv[lid.x] = best;
  bi[lid.x] = besti;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (lid.x < k) {
      let ov = bv[lid.x + k];
      let oi = bi[lid.x + k];
      if (ov > bv[lid.x] || (ov == bv[lid.x] && oi < bi[lid.x])) { bv[lid.x] = ov; bi[lid.x] = oi; }
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) { out[row] = select(bi[0], 0u, bi[0] == 0xffffffffu); }
}
