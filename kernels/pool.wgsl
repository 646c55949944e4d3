// Pooling of a forward pass's final hidden states into one vector (embeddings: op_pool_rows, op_pool_finish), a
// prefill chunk at a time. `rows` (a thread a column d): acc[d] takes the chunk's rows x [rows][D]: MEAN adds their
// sum (sets it on the first chunk), LAST sets the last row, FIRST sets row 0 of the first chunk (a later chunk leaves
// it). `finish` (one workgroup): out[d] = acc[d] * scale (the mean's 1 / tokens), then with normalize divided by the
// L2 norm of the whole vector, at least 1e-12 (sentence-transformers' Normalize: torch's F.normalize). Only out's
// D floats go back to the CPU.
//   x: [rows][D] f32; acc: [D] f32 (kept between chunks); out: [D] f32
//! variant rows: FINISH=0
//! variant finish: FINISH=1
struct Params { d: u32, rows: u32, mode: u32, first: u32, scale: f32, normalize: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;

const MEAN: u32 = 0u;
const LAST: u32 = 1u;
const FIRST: u32 = 2u;

#if FINISH
@group(0) @binding(1) var<storage, read> acc: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u) {
  var s = 0.0;
  for (var d = lid.x; d < p.d; d += 256u) {
    let v = acc[d] * p.scale;
    s += v * v;
  }
  partial[lid.x] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (lid.x < k) { partial[lid.x] += partial[lid.x + k]; }
    workgroupBarrier();
  }
  let norm = max(sqrt(partial[0]), 1e-12);
  for (var d = lid.x; d < p.d; d += 256u) {
    let v = acc[d] * p.scale;
    if (p.normalize != 0u) { out[d] = v / norm; } else { out[d] = v; }
  }
}
#else
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> acc: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let d = gid.x + gid.y * nwg.x * 256u;
  if (d >= p.d) { return; }
  if (p.mode == LAST) {
    acc[d] = x[(p.rows - 1u) * p.d + d];
  } else if (p.mode == FIRST) {
    if (p.first != 0u) { acc[d] = x[d]; }
  } else {
    var s = 0.0;
    if (p.first == 0u) { s = acc[d]; }
    for (var r = 0u; r < p.rows; r++) {
      s += x[r * p.d + d];
    }
    acc[d] = s;
  }
}
#endif
