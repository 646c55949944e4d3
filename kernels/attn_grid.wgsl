// One thread: writes the indirect dispatch arguments of attn_split for the current length,
// (n_kv_head, number of B-key chunks from the window's first block to pos[0], 1). Never 0, never over max_chunks
// (the partials attn_split writes hold that many), whatever pos[0] holds. With n_seq sequences (attn_split's
// paged variants) the chunks are the most any sequence needs (pos[0..n_seq)) and the third dimension n_seq.
//! variant u32: X=0
struct Params { n_kv_head: u32, ctx: u32, window: u32, max_chunks: u32, n_seq: u32, _a: u32, _b: u32, _c: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> pos: array<u32>;
@group(0) @binding(2) var<storage, read_write> args: array<u32>;
#include "lib/kv_range.wgsli"
override B: u32 = 128u; // chunk length of attn_split

@compute @workgroup_size(1)
fn main() {
  var chunks = 1u;
  for (var s = 0u; s < max(p.n_seq, 1u); s++) {
    let last = kv_last(pos[s]);
    let first = kv_first(last, p.ctx, p.window);
    chunks = max(chunks, min((last - (first / B) * B) / B + 1u, p.max_chunks)); // never past the partials
  }
  args[0] = p.n_kv_head;
  args[1] = chunks;
  args[2] = max(p.n_seq, 1u);
}
