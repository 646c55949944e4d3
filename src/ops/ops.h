/* GPU ops: each appends dispatch records to a recorder. Params structs mirror the WGSL Params blocks.
   Every encode function validates its shapes first and returns a status with the reason on the recorder
   (gpu_recorder_error). Tensors are gpu_views; shapes are given as arguments and noted per function. */
#ifndef WGLLM_OPS_H
#define WGLLM_OPS_H
#include "gpu.h"

typedef enum op_wtype { OP_W_F32 = 0, OP_W_F16 = 1 } op_wtype;
const char *op_wtype_variant(op_wtype t);

/* Splits a 1-D count of workgroups into a grid that fits the device's per-dimension limit. */
void op_grid_1d(const gpu_recorder *rec, uint32_t groups, uint32_t grid[3]);
gpu_context *op_ctx(const gpu_recorder *rec);
wgllm_status op_fail(gpu_recorder *rec, wgllm_status s, const char *fmt, ...);

/* out[i] = bits (a raw 32-bit pattern) for i < n.   out: [n] u32/f32 */
wgllm_status op_fill(gpu_recorder *rec, gpu_view out, uint32_t n, uint32_t bits);
wgllm_status op_fill_f32(gpu_recorder *rec, gpu_view out, uint32_t n, float value);

/* out = a + b / a * b with b broadcast when nb divides n.   a, out: [n]; b: [nb] */
wgllm_status op_add(gpu_recorder *rec, gpu_view a, gpu_view b, gpu_view out, uint32_t n, uint32_t nb);
wgllm_status op_mul(gpu_recorder *rec, gpu_view a, gpu_view b, gpu_view out, uint32_t n, uint32_t nb);

/* RMSNorm. x: [rows][in_stride] (first n used), w: [n], out: [rows][out_stride]. */
wgllm_status op_rms_norm(gpu_recorder *rec, gpu_view x, gpu_view w, gpu_view out, uint32_t n, uint32_t rows,
                         uint32_t in_stride, uint32_t out_stride, float eps, float w_offset);

/* RoPE in place. x: [n_tokens][token_stride] holding n_heads heads of head_dim; pos: [n_tokens] u32;
   cs: [max_pos][rot_dim/2] (cos, sin) pairs. mode 0 half-split, 1 adjacent pairs. */
typedef enum op_rope_mode { OP_ROPE_HALF = 0, OP_ROPE_ADJACENT = 1 } op_rope_mode;
wgllm_status op_rope(gpu_recorder *rec, gpu_view x, gpu_view pos, gpu_view cs, uint32_t n_tokens,
                     uint32_t n_heads, uint32_t head_dim, uint32_t rot_dim, uint32_t token_stride,
                     op_rope_mode mode, uint32_t max_pos);
/* CPU side of RoPE: fills cs [max_pos][rot_dim/2][2] from inverse frequencies inv_freq [rot_dim/2]
   (angle = f32(pos) * inv_freq in f32, as transformers does; cos/sin in double). */
void op_rope_table(float *cs, const float *inv_freq, uint32_t rot_dim, uint32_t max_pos, float attn_scale);

/* Row softmax of scale * x. x, out: [rows][n] */
wgllm_status op_softmax(gpu_recorder *rec, gpu_view x, gpu_view out, uint32_t n, uint32_t rows, float scale);

/* Row argmax. x: [rows][n] f32, out: [rows] u32 */
wgllm_status op_argmax(gpu_recorder *rec, gpu_view x, gpu_view out, uint32_t n, uint32_t rows);

/* Dense linear: y[M][N] = x[M][K] . W[N][K]^T (+ bias[N] when bias.buf). Routes M <= 4 to the GEMV. */
wgllm_status op_linear(gpu_recorder *rec, gpu_view x, gpu_view w, op_wtype wt, gpu_view bias, gpu_view y,
                       uint32_t M, uint32_t N, uint32_t K);
/* The two routes, callable directly (tests check both on the same shapes). */
wgllm_status op_matvec(gpu_recorder *rec, gpu_view x, gpu_view w, op_wtype wt, gpu_view bias, gpu_view y,
                       uint32_t M, uint32_t N, uint32_t K);
wgllm_status op_matmul(gpu_recorder *rec, gpu_view x, gpu_view w, op_wtype wt, gpu_view bias, gpu_view y,
                       uint32_t M, uint32_t N, uint32_t K);

/* Embedding gather. ids: [n_tokens] u32, table: [V][D] f32/f16, out: [n_tokens][D] */
wgllm_status op_embedding(gpu_recorder *rec, gpu_view ids, gpu_view table, op_wtype wt, gpu_view out,
                          uint32_t n_tokens, uint32_t D, uint32_t V, float scale);

#endif
