// One thread: writes the indirect dispatch arguments of attn_split for the current length,
// (n_kv_head, number of B-key chunks from the window's first block to pos[0], 1). Never 0, never over max_chunks
// (the partials attn_split writes hold that many), whatever pos[0] holds.
//! variant u32: X=0
struct Params { n_kv_head: u32, ctx: u32, window: u32, max_chunks: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> pos: array<u32>;
@group(0) @binding(2) var<storage, read_write> args: array<u32>;
#include "lib/kv_range.wgsli"
override B: u32 = 128u; // chunk length of attn_split

@compute @workgroup_size(1)
fn main() {
  let last = kv_last(pos[0]);
  let first = kv_first(last, p.ctx, p.window);
  args[0] = p.n_kv_head;
  args[1] = min((last - (first / B) * B) / B + 1u, p.max_chunks); // never past the partials attn_split has
  args[2] = 1u;
}
