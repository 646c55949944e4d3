// Operands to f16 for the tensor-core GEMM on f16 operands (op_dequant_f16, op_convert_f16; kernels/gemm_f16.wgsl):
// out [*][K] f16 as u32 pairs (element k in the low half when k is even). Rows r < rows of this dispatch are the
// source's rows r in any storage (lib/weight_load.wgsli: a weight [rows][K] dequantized; activations x [M][K] f32
// are the f32 storage), clamped to f16's range and rounded to nearest even; rows rows.. rows_total - 1 are zeros
// (the padding up to the GEMM's tile). Row r lands at out row out_row0 + r (a weight in row parts: a dispatch a
// part, each from its own rows on). A thread converts 8 elements of a row; K a multiple of 8 (the op checks).
//! axis storage
struct Params { rows: u32, K: u32, rows_total: u32, out_row0: u32 };
@group(0) @binding(0) var<uniform> p: Params;
#define WBIND 1
#define SBIND 3
#include "lib/weight_load.wgsli"
@group(0) @binding(2) var<storage, read_write> out: array<vec4<u32>>;

fn h2(a: f32, b: f32) -> u32 { return pack2x16float(clamp(vec2<f32>(a, b), vec2<f32>(-65504.0), vec2<f32>(65504.0))); }

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 256u; // the thread's 8 elements: row i / (K / 8), columns 8 (i % (K / 8))..
  let per = p.K / 8u;
  let r = i / per;
  if (r >= p.rows_total) { return; }
  let o = (p.out_row0 + r) * per + i % per;
  if (r >= p.rows) {
    out[o] = vec4<u32>(0u);
    return;
  }
  let e = r * p.K + 8u * (i % per);
#if WBLK
  let v = wload8(e);
#else
#if WQ4
  // q4gsw: the 8 nibbles are one word, of one group (G a multiple of 8)
  let q = w[e >> 3u];
  let g = e / G;
  let sc = unpack2x16float(wscale[g >> 1u])[g & 1u];
  var v: array<f32, 8>;
  for (var j = 0u; j < 8u; j++) { v[j] = (f32((q >> (4u * j)) & 15u) - 8.0) * sc; }
#else
  var v: array<f32, 8>;
  for (var j = 0u; j < 8u; j++) { v[j] = wload(e + j); }
#endif
#endif
  out[o] = vec4<u32>(h2(v[0], v[1]), h2(v[2], v[3]), h2(v[4], v[5]), h2(v[6], v[7]));
}
