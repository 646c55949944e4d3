#!/usr/bin/env python3
"""Reference fixtures for conformance tests: tiny random-weight decoder models plus the logits that
Hugging Face transformers computes for them (float32, CPU).

Runs where torch and transformers are installed (the GPU device machine has both):
    python3 make_refs.py OUT_DIR [--seed N] [--scale small|medium] [--only NAME,NAME]

Each model lands in OUT_DIR/<name>/ with:
    config.json + model.safetensors   (Hugging Face layout; or model.gguf for the *_gguf cases)
    ref.json                          prompt_ids, greedy_ids, logits_shape, notes
    logits.f32                        little-endian float32, shape [T+N, vocab]:
                                      rows 0..T-1   = logits of a full prefill over prompt_ids (no cache)
                                      rows T..T+N-1 = logits of decode steps fed greedy_ids[0..N-1] one by one
                                                      on top of the prompt's KV cache (teacher forcing)
greedy_ids[i] is the argmax of row T-1+i, so an engine's greedy run can be compared too (watch the near ties:
ref.json gives the smallest top-1 margin).
The embedding case (--only qwen3_embed) writes no logits: OUT_DIR/qwen3_embed/ in Qwen3-Embedding's layout
(Qwen3Model weights, modules.json, 1_Pooling/config.json, a Normalize module) and OUT_DIR/qwen3_embed_gguf/model.gguf,
each with emb_ref.json: per input its ids, the last token's final hidden state L2-normalised and the mean of all of
them unnormalised (tests/test_embed.c).
"""
import argparse, json, math, os, sys
import numpy as np, torch, transformers
# the GGUF writer and its quantizers: the project's one Python GGUF module (tools/gguf/gguf_writer.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gguf"))
import gguf_writer as gw  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("out"); ap.add_argument("--seed", type=int, default=11)
ap.add_argument("--scale", choices=["small", "medium"], default="small"); ap.add_argument("--only", default="")
A = ap.parse_args()
torch.manual_seed(A.seed); np.random.seed(A.seed)
S = {"small": dict(V=320, H=96, I=192, T=24, N=8), "medium": dict(V=512, H=256, I=512, T=40, N=12)}[A.scale]
V, H, I, T, N = S["V"], S["H"], S["I"], S["T"], S["N"]

def perturb(model, std=0.08, gemma_norm=False):
    """Random weights with spread, so wrong math shows: norms near 1 (or near 0 for Gemma's (1+w)), small biases."""
    g = torch.Generator().manual_seed(A.seed * 7919)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.numel() == 1: continue
            if p.dim() == 1 and "norm" in n: p.copy_((0.0 if gemma_norm else 1.0) + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1: p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else: p.copy_(std * torch.randn(p.shape, generator=g))

def write_ref(d, name, model, note):
    m32 = model.float().eval()
    g = torch.Generator().manual_seed(A.seed + 17)
    prompt = torch.randint(3, V, (1, T), generator=g)
    with torch.no_grad():
        rows = list(m32(prompt, use_cache=False).logits[0].float())
        out = m32(prompt, use_cache=True); past = out.past_key_values; last = out.logits[0, -1]; gen = []
        for _ in range(N):
            nxt = int(torch.argmax(last)); gen.append(nxt)
            out = m32(torch.tensor([[nxt]]), past_key_values=past, use_cache=True); past = out.past_key_values
            last = out.logits[0, -1].float(); rows.append(last)
    L = torch.stack(rows)
    L.numpy().astype("<f4").tofile(os.path.join(d, "logits.f32"))
    top2 = L.topk(2).values
    ref = {"name": name, "arch": type(model).__name__, "prompt_ids": prompt[0].tolist(), "greedy_ids": gen,
           "logits_file": "logits.f32", "logits_shape": [T + N, V], "min_top1_margin": float((top2[:, 0] - top2[:, 1]).min()),
           "transformers": transformers.__version__, "seed": A.seed, "note": note}
    json.dump(ref, open(os.path.join(d, "ref.json"), "w"), indent=1)
    print(f"{name}: {sum(p.numel() for p in model.parameters())} params, greedy {gen}")

def perturb_ret(m):
    perturb(m); return m

def gemma4_scalars(m):
    """Gemma 4's layer_scalar is a buffer (perturb leaves it at 1): random values so applying it is checked."""
    g = torch.Generator().manual_seed(A.seed * 31)
    with torch.no_grad():
        for layer in m.model.layers: layer.layer_scalar.copy_(0.5 + torch.rand(1, generator=g))
    return m

def gemma4_moe_scales(m):
    """Gemma 4's router.scale near 1 and per_expert_scale in [0.5, 1.5] (perturb would make both ~0.1 * randn: a router
    that cannot tell the experts apart), so that the routing and both scales show in the logits."""
    g = torch.Generator().manual_seed(A.seed * 37)
    with torch.no_grad():
        for layer in m.model.layers:
            layer.router.scale.copy_(1.0 + 0.2 * torch.randn(layer.router.scale.shape, generator=g))
            layer.router.per_expert_scale.copy_(0.5 + torch.rand(layer.router.per_expert_scale.shape, generator=g))
    return m

def hf_case(name, model, note, dtype=torch.float32):
    d = os.path.join(A.out, name); os.makedirs(d, exist_ok=True)
    model = model.to(dtype); model.save_pretrained(d, safe_serialization=True)
    for f in ("generation_config.json",):
        if os.path.exists(os.path.join(d, f)): os.remove(os.path.join(d, f))
    # wgllm fix: model.to(bf16) also rounds non-persistent float buffers (RoPE inv_freq) to bf16, and
    # .float() does not restore them. Reload from disk in float32 so buffers are computed as a user's load would.
    model = type(model).from_pretrained(d, dtype=torch.float32)
    write_ref(d, name, model, note + f"; weights stored as {str(dtype).replace('torch.', '')}")

def llama_gguf_case(name, heads, kv_heads, layers, tied, rope_scaling):
    hd = H // heads
    c = transformers.LlamaConfig(vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv_heads, max_position_embeddings=4096, rope_theta=500000.0, tie_word_embeddings=tied,
        rope_scaling=rope_scaling, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)
    m = transformers.LlamaForCausalLM(c); perturb(m); m.eval()
    d = os.path.join(A.out, name); os.makedirs(d, exist_ok=True)
    sd = {k: v.detach().float().numpy() for k, v in m.state_dict().items()}; deq = {}
    ts = []
    # ties_to_even: the committed fixtures' Q8_0 rounding (numpy's round), kept so they regenerate byte for byte
    blob, deq["model.embed_tokens.weight"] = gw.q8_0(sd["model.embed_tokens.weight"], ties_to_even=True); ts.append(("token_embd.weight", gw.GGML_Q8_0, [H, V], blob))
    ts.append(("output_norm.weight", gw.GGML_F32, [H], sd["model.norm.weight"].astype("<f4").tobytes()))
    if not tied:
        blob, deq["lm_head.weight"] = gw.q8_0(sd["lm_head.weight"], ties_to_even=True); ts.append(("output.weight", gw.GGML_Q8_0, [H, V], blob))
    if rope_scaling:
        f, lo, hi, old = rope_scaling["factor"], rope_scaling["low_freq_factor"], rope_scaling["high_freq_factor"], rope_scaling["original_max_position_embeddings"]
        rf = []
        for fr in 1.0 / (500000.0 ** (np.arange(0, hd, 2, dtype=np.float32) / hd)):
            wl = 2 * math.pi / fr
            if wl < old / hi: rf.append(1.0)
            elif wl > old / lo: rf.append(f)
            else: sm = (old / wl - lo) / (hi - lo); rf.append(1 / ((1 - sm) / f + sm))
        ts.append(("rope_freqs.weight", gw.GGML_F32, [hd // 2], np.array(rf, dtype="<f4").tobytes()))
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(layers):
        p = f"model.layers.{i}."
        ts.append((f"blk.{i}.attn_norm.weight", gw.GGML_F32, [H], sd[p + "input_layernorm.weight"].astype("<f4").tobytes()))
        ts.append((f"blk.{i}.ffn_norm.weight", gw.GGML_F32, [H], sd[p + "post_attention_layernorm.weight"].astype("<f4").tobytes()))
        for hf, gg in names.items():
            w = sd[p + hf + ".weight"]
            wp = gw.permute_rows_np(w, heads) if gg == "attn_q" else gw.permute_rows_np(w, kv_heads) if gg == "attn_k" else w
            blob, _ = gw.q4_0(wp); _, deq[p + hf + ".weight"] = gw.q4_0(w)   # rows quantize independently
            ts.append((f"blk.{i}.{gg}.weight", gw.GGML_Q4_0, [w.shape[1], w.shape[0]], blob))
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581" + chr(97 + j % 26) * (1 + j // 26) for j in range(V - 259)]
    kv = {"general.architecture": ("str", "llama"), "general.name": ("str", name), "general.alignment": ("u32", 32), "general.file_type": ("u32", 2),
          "llama.context_length": ("u32", 4096), "llama.embedding_length": ("u32", H), "llama.block_count": ("u32", layers),
          "llama.feed_forward_length": ("u32", I), "llama.rope.dimension_count": ("u32", hd), "llama.attention.head_count": ("u32", heads),
          "llama.attention.head_count_kv": ("u32", kv_heads), "llama.attention.layer_norm_rms_epsilon": ("f32", 1e-5),
          "llama.rope.freq_base": ("f32", 500000.0), "llama.vocab_size": ("u32", V),
          "tokenizer.ggml.model": ("str", "llama"), "tokenizer.ggml.tokens": (("arr", "str"), toks),
          "tokenizer.ggml.scores": (("arr", "f32"), [0.0] * 259 + [-float(j) for j in range(V - 259)]),
          "tokenizer.ggml.token_type": (("arr", "i32"), [2, 3, 3] + [6] * 256 + [1] * (V - 259)),
          "tokenizer.ggml.bos_token_id": ("u32", 1), "tokenizer.ggml.eos_token_id": ("u32", 2), "tokenizer.ggml.unknown_token_id": ("u32", 0)}
    gw.write_gguf(os.path.join(d, "model.gguf"), [(k, t, v) for k, (t, v) in kv.items()], ts)
    with torch.no_grad():
        msd = m.state_dict()
        for k, v in deq.items(): msd[k].copy_(torch.from_numpy(v))
    write_ref(d, name, m, "GGUF v3 in llama.cpp layout: Q4_0 linears (attn_q/attn_k rows permuted for adjacent-pair RoPE), "
              "Q8_0 embedding/output, F32 norms" + (", rope_freqs (llama3 scaling)" if rope_scaling else "") +
              "; reference = the same model with every quantized tensor dequantized")

def gemma3_gguf_case(name):
    """Gemma 3 as llama.cpp's converter writes it: norms stored as 1 + w, Q8_0 linears (no row permutation: NeoX
    RoPE), every 6th layer global, local RoPE base 10000, linear RoPE scaling on the global layers, tied output."""
    layers, heads, kv_heads, hd = 7, 4, 2, 32
    types = ["sliding_attention"] * 5 + ["full_attention", "sliding_attention"]
    c = transformers.Gemma3TextConfig(vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv_heads, head_dim=hd, sliding_window=8, max_position_embeddings=4096, query_pre_attn_scalar=hd,
        layer_types=types, rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                                            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
        bos_token_id=1, eos_token_id=2, tie_word_embeddings=True)
    m = transformers.Gemma3ForCausalLM(c); perturb(m, gemma_norm=True); m.eval()
    d = os.path.join(A.out, name); os.makedirs(d, exist_ok=True)
    sd = {k: v.detach().float().numpy() for k, v in m.state_dict().items()}; deq = {}
    ts = []
    def norm(key): return (sd[key] + 1.0).astype("<f4").tobytes()   # the converter's norm shift
    blob, deq["model.embed_tokens.weight"] = gw.q8_0(sd["model.embed_tokens.weight"]); ts.append(("token_embd.weight", gw.GGML_Q8_0, [H, V], blob))
    ts.append(("output_norm.weight", gw.GGML_F32, [H], norm("model.norm.weight")))
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    norms = {"input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
             "post_feedforward_layernorm": "post_ffw_norm", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm"}
    for i in range(layers):
        p = f"model.layers.{i}."
        for hf, gg in norms.items():
            w = sd[p + hf + ".weight"]; ts.append((f"blk.{i}.{gg}.weight", gw.GGML_F32, [w.shape[0]], norm(p + hf + ".weight")))
        for hf, gg in names.items():
            w = sd[p + hf + ".weight"]
            blob, deq[p + hf + ".weight"] = gw.q8_0(w)
            ts.append((f"blk.{i}.{gg}.weight", gw.GGML_Q8_0, [w.shape[1], w.shape[0]], blob))
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581" + chr(97 + j % 26) * (1 + j // 26) for j in range(V - 259)]
    g = "gemma3."
    kv = {"general.architecture": ("str", "gemma3"), "general.name": ("str", name), "general.alignment": ("u32", 32), "general.file_type": ("u32", 7),
          g + "context_length": ("u32", 4096), g + "embedding_length": ("u32", H), g + "block_count": ("u32", layers),
          g + "feed_forward_length": ("u32", I), g + "attention.head_count": ("u32", heads), g + "attention.head_count_kv": ("u32", kv_heads),
          g + "attention.key_length": ("u32", hd), g + "attention.value_length": ("u32", hd),
          g + "attention.layer_norm_rms_epsilon": ("f32", 1e-6), g + "rope.freq_base": ("f32", 1000000.0),
          g + "attention.sliding_window": ("u32", 8), g + "rope.scaling.type": ("str", "linear"), g + "rope.scaling.factor": ("f32", 8.0),
          "tokenizer.ggml.model": ("str", "llama"), "tokenizer.ggml.tokens": (("arr", "str"), toks),
          "tokenizer.ggml.scores": (("arr", "f32"), [0.0] * 259 + [-float(j) for j in range(V - 259)]),
          "tokenizer.ggml.token_type": (("arr", "i32"), [2, 3, 3] + [6] * 256 + [1] * (V - 259)),
          "tokenizer.ggml.bos_token_id": ("u32", 1), "tokenizer.ggml.eos_token_id": ("u32", 2), "tokenizer.ggml.unknown_token_id": ("u32", 0)}
    gw.write_gguf(os.path.join(d, "model.gguf"), [(k, t, v) for k, (t, v) in kv.items()], ts)
    with torch.no_grad():
        msd = m.state_dict()
        for k, v in deq.items(): msd[k].copy_(torch.from_numpy(v))
    write_ref(d, name, m, "GGUF gemma3 in llama.cpp's layout: norms as 1 + w, Q8_0 embedding and linears, 7 layers (every 6th global), "
              "window 8, linear RoPE factor 8 on the global layer; reference = the same model with every quantized tensor dequantized")

KQ_ALL = [{"attn_q": "Q4_K", "attn_k": "Q5_K", "attn_v": "Q6_K", "attn_output": "Q3_K", "ffn_gate": "Q2_K", "ffn_up": "IQ4_XS", "ffn_down": "Q4_1"},
          {"attn_q": "Q5_0", "attn_k": "Q5_1", "attn_v": "IQ4_NL", "attn_output": "Q4_K", "ffn_gate": "Q4_K", "ffn_up": "Q4_K", "ffn_down": "Q6_K"}]
# llama.cpp's Q4_K_M (Q6_K for attn_v / ffn_down on its "more bits" layers, Q6_K output), a Q5_K_M layer whose
# gate and up differ in type, and a Q8_0 output projection: every storage of the fused decode GEMV, and fused
# projections in parts
KQ_M = [{"attn_q": "Q4_K", "attn_k": "Q4_K", "attn_v": "Q6_K", "attn_output": "Q4_K", "ffn_gate": "Q4_K", "ffn_up": "Q4_K", "ffn_down": "Q6_K"},
        {"attn_q": "Q5_K", "attn_k": "Q5_K", "attn_v": "Q5_K", "attn_output": "Q5_K", "ffn_gate": "Q5_K", "ffn_up": "Q6_K", "ffn_down": "Q5_K"},
        {"attn_q": "Q4_K", "attn_k": "Q4_K", "attn_v": "Q4_K", "attn_output": "Q8_0", "ffn_gate": "Q4_K", "ffn_up": "Q4_K", "ffn_down": "Q4_K"}]
# llama.cpp's Q4_0 file type: Q4_0 everywhere but the output tensor, which its quantizer writes as Q6_K
Q40_Q6K = [{g: "Q4_0" for g in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")}] * 2

def llama_kquants_gguf_case(name, plan=KQ_ALL, emb="Q4_K", out="Q6_K", file_type=15, note=None):
    """ggml block types mixed in one Llama GGUF as llama.cpp lays it out (q/k rows permuted), one type a tensor
    as `plan` says (a dict a layer): random blocks of each type (tools/gguf/ggml_blocks.py), so the weights are
    exactly their dequantized values and the transformers reference uses those."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gguf"))
    import ggml_blocks as gb
    Hk, Ik, heads, kv_heads, layers = 256, 512, 4, 2, len(plan)
    hd = Hk // heads
    c = transformers.LlamaConfig(vocab_size=V, hidden_size=Hk, intermediate_size=Ik, num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv_heads, max_position_embeddings=4096, rope_theta=10000.0, tie_word_embeddings=False,
        rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)
    m = transformers.LlamaForCausalLM(c); perturb(m); m.eval()
    d = os.path.join(A.out, name); os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(A.seed)
    sd = {k: v.detach().float().numpy() for k, v in m.state_dict().items()}
    new_w, ts = {}, []
    def unpermute(w, n): return w.reshape(n, w.shape[0] // n // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
    def add(gguf_name, hf_name, tname, perm=None, scale=0.05):
        rows, cols = sd[hf_name].shape
        blob, w = gb.random_blocks(tname, rows, cols, rng, scale)
        new_w[hf_name] = unpermute(w, perm) if perm else w
        ts.append((gguf_name, gb.TYPES[tname][0], [cols, rows], blob))
    add("token_embd.weight", "model.embed_tokens.weight", emb, scale=0.5)
    add("output.weight", "lm_head.weight", out)
    ts.append(("output_norm.weight", gw.GGML_F32, [Hk], sd["model.norm.weight"].astype("<f4").tobytes()))
    names = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    for i in range(layers):
        p = f"model.layers.{i}."
        ts.append((f"blk.{i}.attn_norm.weight", gw.GGML_F32, [Hk], sd[p + "input_layernorm.weight"].astype("<f4").tobytes()))
        ts.append((f"blk.{i}.ffn_norm.weight", gw.GGML_F32, [Hk], sd[p + "post_attention_layernorm.weight"].astype("<f4").tobytes()))
        for gg, hf in names.items():
            perm = heads if gg == "attn_q" else kv_heads if gg == "attn_k" else None
            add(f"blk.{i}.{gg}.weight", p + hf + ".weight", plan[i][gg], perm)
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581" + chr(97 + j % 26) * (1 + j // 26) for j in range(V - 259)]
    kv = {"general.architecture": ("str", "llama"), "general.name": ("str", name), "general.alignment": ("u32", 32), "general.file_type": ("u32", file_type),
          "llama.context_length": ("u32", 4096), "llama.embedding_length": ("u32", Hk), "llama.block_count": ("u32", layers),
          "llama.feed_forward_length": ("u32", Ik), "llama.rope.dimension_count": ("u32", hd), "llama.attention.head_count": ("u32", heads),
          "llama.attention.head_count_kv": ("u32", kv_heads), "llama.attention.layer_norm_rms_epsilon": ("f32", 1e-5),
          "llama.rope.freq_base": ("f32", 10000.0), "llama.vocab_size": ("u32", V),
          "tokenizer.ggml.model": ("str", "llama"), "tokenizer.ggml.tokens": (("arr", "str"), toks),
          "tokenizer.ggml.scores": (("arr", "f32"), [0.0] * 259 + [-float(j) for j in range(V - 259)]),
          "tokenizer.ggml.token_type": (("arr", "i32"), [2, 3, 3] + [6] * 256 + [1] * (V - 259)),
          "tokenizer.ggml.bos_token_id": ("u32", 1), "tokenizer.ggml.eos_token_id": ("u32", 2), "tokenizer.ggml.unknown_token_id": ("u32", 0)}
    gw.write_gguf(os.path.join(d, "model.gguf"), [(k, t, v) for k, (t, v) in kv.items()], ts)
    with torch.no_grad():
        msd = m.state_dict()
        for k, v in new_w.items(): msd[k].copy_(torch.from_numpy(np.ascontiguousarray(v)))
    write_ref(d, name, m, note or "GGUF llama with every block type: Q4_K embedding, Q6_K output, per-projection Q2_K, Q3_K, Q4_K, "
              "Q5_K, Q6_K, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS (random blocks, weights = their dequantized values); q/k rows "
              "permuted as llama.cpp writes them")

def qwen3_embed_case(name):
    """Qwen3-Embedding's layout: the weights of a Qwen3Model (tensor names without "model.", no lm_head, untied as
    the 4B/8B models are), sentence-transformers' modules.json with last-token pooling (1_Pooling/config.json) and
    a Normalize module; and the same weights as a qwen3 GGUF with qwen3.pooling_type 3 (last) beside it
    (<name>_gguf/model.gguf, F32 tensors, a llama-style tokenizer). emb_ref.json holds, for inputs of several lengths,
    the final norm's hidden states pooled by the last token and L2-normalised (the model's own pooling) and pooled by
    the mean of every token, unnormalised, as transformers computes them (float32, CPU)."""
    c = transformers.Qwen3Config(vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, max_position_embeddings=4096, rope_theta=1000000.0, tie_word_embeddings=False,
        rms_norm_eps=1e-6)
    m = transformers.Qwen3Model(c); perturb(m); m.eval()
    d = os.path.join(A.out, name); os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    m.save_pretrained(d, safe_serialization=True)
    for f in ("generation_config.json",):
        if os.path.exists(os.path.join(d, f)): os.remove(os.path.join(d, f))
    json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
              open(os.path.join(d, "modules.json"), "w"), indent=1)
    json.dump({"word_embedding_dimension": H, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": False,
               "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
               "pooling_mode_lasttoken": True, "include_prompt": True}, open(os.path.join(d, "1_Pooling", "config.json"), "w"), indent=1)
    m = transformers.Qwen3Model.from_pretrained(d, dtype=torch.float32).eval()   # RoPE buffers as a user's load makes them
    g = torch.Generator().manual_seed(A.seed + 23)
    inputs = []
    for n in (1, 7, T, 53):   # 53: several prefill chunks of 16 (the test's), the mean over all of them
        ids = torch.randint(3, V, (1, n), generator=g)
        with torch.no_grad():
            h = m(ids).last_hidden_state[0].float()   # [n][H], after the final norm
        last = torch.nn.functional.normalize(h[-1], p=2, dim=0)
        inputs.append({"ids": ids[0].tolist(), "last_normalized": last.tolist(), "mean": h.mean(0).tolist()})
    ref = {"name": name, "arch": "Qwen3Model", "n_embd": H, "pooling": "last", "normalize": True, "inputs": inputs,
           "transformers": transformers.__version__, "seed": A.seed,
           "note": "Qwen3-Embedding layout (Qwen3Model weights, untied, no lm_head; sentence-transformers last-token pooling + "
                   "Normalize); per input: last token L2-normalised, and the mean of every token unnormalised"}
    json.dump(ref, open(os.path.join(d, "emb_ref.json"), "w"), indent=1)
    # the GGUF form: llama.cpp's qwen3 names (NeoX RoPE: q/k rows as they are), F32, pooling_type 3 (last)
    dg = os.path.join(A.out, name + "_gguf"); os.makedirs(dg, exist_ok=True)
    sd = {k: v.detach().float().numpy() for k, v in m.state_dict().items()}
    def f32(key): return sd[key].astype("<f4").tobytes()
    ts = [("token_embd.weight", gw.GGML_F32, [H, V], f32("embed_tokens.weight")),
          ("output_norm.weight", gw.GGML_F32, [H], f32("norm.weight"))]
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_norm": "attn_q_norm",
             "self_attn.k_norm": "attn_k_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate",
             "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(c.num_hidden_layers):
        for hf, gg in names.items():
            w = sd[f"layers.{i}.{hf}.weight"]
            ts.append((f"blk.{i}.{gg}.weight", gw.GGML_F32, list(reversed(w.shape)), w.astype("<f4").tobytes()))
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581" + chr(97 + j % 26) * (1 + j // 26) for j in range(V - 259)]
    kv = {"general.architecture": ("str", "qwen3"), "general.name": ("str", name + "_gguf"), "general.alignment": ("u32", 32),
          "general.file_type": ("u32", 0), "qwen3.context_length": ("u32", 4096), "qwen3.embedding_length": ("u32", H),
          "qwen3.block_count": ("u32", c.num_hidden_layers), "qwen3.feed_forward_length": ("u32", I),
          "qwen3.attention.head_count": ("u32", 4), "qwen3.attention.head_count_kv": ("u32", 2),
          "qwen3.attention.key_length": ("u32", 32), "qwen3.attention.value_length": ("u32", 32),
          "qwen3.rope.dimension_count": ("u32", 32), "qwen3.attention.layer_norm_rms_epsilon": ("f32", 1e-6),
          "qwen3.rope.freq_base": ("f32", 1000000.0), "qwen3.pooling_type": ("u32", 3),
          "tokenizer.ggml.model": ("str", "llama"), "tokenizer.ggml.tokens": (("arr", "str"), toks),
          "tokenizer.ggml.scores": (("arr", "f32"), [0.0] * 259 + [-float(j) for j in range(V - 259)]),
          "tokenizer.ggml.token_type": (("arr", "i32"), [2, 3, 3] + [6] * 256 + [1] * (V - 259)),
          "tokenizer.ggml.bos_token_id": ("u32", 1), "tokenizer.ggml.eos_token_id": ("u32", 2), "tokenizer.ggml.unknown_token_id": ("u32", 0)}
    gw.write_gguf(os.path.join(dg, "model.gguf"), [(k, t, v) for k, (t, v) in kv.items()], ts)
    ref["name"] = name + "_gguf"; ref["note"] = "the weights of ../" + name + " as a qwen3 GGUF (F32, qwen3.pooling_type 3: last)"
    json.dump(ref, open(os.path.join(dg, "emb_ref.json"), "w"), indent=1)
    print(f"{name}: {sum(p.numel() for p in m.parameters())} params, {len(inputs)} inputs of {[len(x['ids']) for x in inputs]} tokens")


def hub_experts(d):
    """Transformers 5 keeps MoE experts fused ([E][2F][D] gate_up_proj, [E][D][F] down_proj); the checkpoints users
    download (Qwen3-30B-A3B, Mixtral) have a tensor an expert (mlp.experts.E.gate_proj.weight [F][D], up_proj,
    down_proj [D][F]; Mixtral's block_sparse_moe.experts.E.w1 / w3 / w2). Rewrites model.safetensors in the hub's
    form when save_pretrained wrote the fused one (the fixture is what a download looks like); returns the form found."""
    from safetensors.torch import load_file, save_file
    f = os.path.join(d, "model.safetensors"); sd = load_file(f); out = {}; fused = False
    for k, v in sd.items():
        if k.endswith("experts.gate_up_proj") or k.endswith("experts.down_proj"):
            fused = True; base = k.rsplit(".", 1)[0]; mixtral = ".block_sparse_moe." in k
            for e in range(v.shape[0]):
                if k.endswith("gate_up_proj"):
                    F = v.shape[1] // 2
                    out[f"{base}.{e}.{'w1' if mixtral else 'gate_proj'}.weight"] = v[e, :F].contiguous()
                    out[f"{base}.{e}.{'w3' if mixtral else 'up_proj'}.weight"] = v[e, F:].contiguous()
                else:
                    out[f"{base}.{e}.{'w2' if mixtral else 'down_proj'}.weight"] = v[e].contiguous()
        else: out[k] = v
    if fused: save_file(out, f, metadata={"format": "pt"})
    return "fused, rewritten per expert" if fused else "per expert as saved"

def moe_case(name, model, note):
    d = os.path.join(A.out, name); os.makedirs(d, exist_ok=True)
    model.save_pretrained(d, safe_serialization=True)
    if os.path.exists(os.path.join(d, "generation_config.json")): os.remove(os.path.join(d, "generation_config.json"))
    form = hub_experts(d)
    reloaded = type(model).from_pretrained(d, dtype=torch.float32)
    a = {k: v for k, v in model.float().state_dict().items()}; b = reloaded.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a), "the hub form does not load back to the same weights"
    write_ref(d, name, reloaded, note + f"; experts {form}")
    return reloaded

def qwen3_moe_gguf(name, m):
    """The weights of a Qwen3-MoE model as llama.cpp's converter names them (qwen3moe: blk.N.ffn_gate_inp [E][D], the
    experts stacked per layer ffn_gate_exps / ffn_up_exps [E][F][D] and ffn_down_exps [E][D][F]), F32, with the
    llama-style test tokenizer; llama.cpp's qwen3moe always renormalises the top-k weights (norm_topk_prob true)."""
    c = m.config; dg = os.path.join(A.out, name); os.makedirs(dg, exist_ok=True)
    sd = {k: v.detach().float().numpy() for k, v in m.state_dict().items()}
    def t(gname, a): return (gname, gw.GGML_F32, list(reversed(a.shape)), np.ascontiguousarray(a).astype("<f4").tobytes())
    ts = [t("token_embd.weight", sd["model.embed_tokens.weight"]), t("output_norm.weight", sd["model.norm.weight"])]
    if "lm_head.weight" in sd and not c.tie_word_embeddings: ts.append(t("output.weight", sd["lm_head.weight"]))
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_norm": "attn_q_norm",
             "self_attn.k_norm": "attn_k_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "mlp.gate": "ffn_gate_inp"}
    E = c.num_experts
    for i in range(c.num_hidden_layers):
        for hf, gg in names.items(): ts.append(t(f"blk.{i}.{gg}.weight", sd[f"model.layers.{i}.{hf}.weight"]))
        ex = f"model.layers.{i}.mlp.experts"
        if f"{ex}.gate_up_proj" in sd:
            gu = sd[f"{ex}.gate_up_proj"]; F = gu.shape[1] // 2
            gate, up, down = gu[:, :F], gu[:, F:], sd[f"{ex}.down_proj"]
        else:
            gate = np.stack([sd[f"{ex}.{e}.gate_proj.weight"] for e in range(E)])
            up = np.stack([sd[f"{ex}.{e}.up_proj.weight"] for e in range(E)])
            down = np.stack([sd[f"{ex}.{e}.down_proj.weight"] for e in range(E)])
        ts += [t(f"blk.{i}.ffn_gate_exps.weight", gate), t(f"blk.{i}.ffn_up_exps.weight", up), t(f"blk.{i}.ffn_down_exps.weight", down)]
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581" + chr(97 + j % 26) * (1 + j // 26) for j in range(V - 259)]
    A_ = "qwen3moe"
    kv = {"general.architecture": ("str", A_), "general.name": ("str", name), "general.alignment": ("u32", 32),
          "general.file_type": ("u32", 0), f"{A_}.context_length": ("u32", 4096), f"{A_}.embedding_length": ("u32", c.hidden_size),
          f"{A_}.block_count": ("u32", c.num_hidden_layers), f"{A_}.feed_forward_length": ("u32", c.intermediate_size),
          f"{A_}.expert_feed_forward_length": ("u32", c.moe_intermediate_size),
          f"{A_}.expert_count": ("u32", E), f"{A_}.expert_used_count": ("u32", c.num_experts_per_tok),
          f"{A_}.attention.head_count": ("u32", c.num_attention_heads), f"{A_}.attention.head_count_kv": ("u32", c.num_key_value_heads),
          f"{A_}.attention.key_length": ("u32", c.head_dim), f"{A_}.attention.value_length": ("u32", c.head_dim),
          f"{A_}.rope.dimension_count": ("u32", c.head_dim), f"{A_}.attention.layer_norm_rms_epsilon": ("f32", c.rms_norm_eps),
          f"{A_}.rope.freq_base": ("f32", float(c.rope_parameters["rope_theta"] if getattr(c, "rope_parameters", None) else c.rope_theta)),
          "tokenizer.ggml.model": ("str", "llama"), "tokenizer.ggml.tokens": (("arr", "str"), toks),
          "tokenizer.ggml.scores": (("arr", "f32"), [0.0] * 259 + [-float(j) for j in range(V - 259)]),
          "tokenizer.ggml.token_type": (("arr", "i32"), [2, 3, 3] + [6] * 256 + [1] * (V - 259)),
          "tokenizer.ggml.bos_token_id": ("u32", 1), "tokenizer.ggml.eos_token_id": ("u32", 2), "tokenizer.ggml.unknown_token_id": ("u32", 0)}
    gw.write_gguf(os.path.join(dg, "model.gguf"), [(k, ty, v) for k, (ty, v) in kv.items()], ts)
    src = os.path.join(A.out, name[:-5])
    for f in ("ref.json", "logits.f32"):
        b = open(os.path.join(src, f), "rb").read()
        if f == "ref.json":
            r = json.loads(b); r["name"] = name; r["note"] = f"the weights of ../{name[:-5]} as a qwen3moe GGUF (F32)"; b = json.dumps(r, indent=1).encode()
        open(os.path.join(dg, f), "wb").write(b)

def qwen3_moe_models():
    """qwen3_moe: every layer sparse (as Qwen3-30B-A3B), 8 experts, top 4 renormalised (norm_topk_prob), its GGUF
    beside it; qwen3_moe_mixed: layer 1 dense (mlp_only_layers), decoder_sparse_step 1, top 2 not renormalised."""
    cfg = dict(vocab_size=V, hidden_size=H, intermediate_size=I, moe_intermediate_size=64, num_hidden_layers=3,
               num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=4096, rope_theta=1000000.0,
               tie_word_embeddings=False, rms_norm_eps=1e-6, num_experts=8)
    m = moe_case("qwen3_moe", perturb_ret(transformers.Qwen3MoeForCausalLM(transformers.Qwen3MoeConfig(
        **cfg, num_experts_per_tok=4, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[]))),
        "Qwen3-MoE: 8 experts of 64, top 4 renormalised, every layer sparse, q/k RMSNorm, untied")
    qwen3_moe_gguf("qwen3_moe_gguf", m)
    moe_case("qwen3_moe_mixed", perturb_ret(transformers.Qwen3MoeForCausalLM(transformers.Qwen3MoeConfig(
        **cfg, num_experts_per_tok=2, norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[1]))),
        "Qwen3-MoE: 8 experts, top 2 not renormalised, layer 1 a dense MLP of 192 (mlp_only_layers)")

def mixtral_model():
    moe_case("mixtral", perturb_ret(transformers.MixtralForCausalLM(transformers.MixtralConfig(
        vocab_size=V, hidden_size=H, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=4096, rope_theta=1000000.0, tie_word_embeddings=False, rms_norm_eps=1e-5,
        num_local_experts=4, num_experts_per_tok=2, sliding_window=None))),
        "Mixtral: 4 experts of 64, top 2 (softmax over the chosen two), GQA 4/2, untied")

def phi3_model(name, heads, kv_heads, partial, orig, max_pos, window, tied, note):
    """Phi-3 / Phi-4-mini: qkv_proj and gate_up_proj fused, partial rotary, longrope with random short and long factors
    (short in [1, 1.5], long in [1, 4]) and the attention factor its max_position_embeddings / original gives."""
    hd = H // heads; half = int(hd * partial) // 2
    g = torch.Generator().manual_seed(A.seed * 41 + heads)
    short = [round(1.0 + 0.5 * float(x), 3) for x in torch.rand(half, generator=g)]
    long = [round(1.0 + 3.0 * float(x), 3) for x in torch.rand(half, generator=g)]
    rp = {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": short, "long_factor": long,
          "original_max_position_embeddings": orig}
    if partial != 1.0: rp["partial_rotary_factor"] = partial
    c = transformers.Phi3Config(vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=3, num_attention_heads=heads,
        num_key_value_heads=kv_heads, max_position_embeddings=max_pos, original_max_position_embeddings=orig, rope_parameters=rp,
        partial_rotary_factor=partial, sliding_window=window, tie_word_embeddings=tied, rms_norm_eps=1e-5, bos_token_id=1,
        eos_token_id=2, pad_token_id=0)
    hf_case(name, perturb_ret(transformers.Phi3ForCausalLM(c)), note)

def mxfp4_round(w):
    """w [..., R, K] (K whole blocks of 32) rounded to MXFP4 values: each block of 32 takes the e8m0 scale 2^(e - 127)
    that brings its largest |w| to at most 6, each element the nearest e2m1 value (0, 0.5, 1, 1.5, 2, 3, 4, 6 and
    their negatives) times it. Returns (the rounded float tensor, blocks uint8 [..., R, K/32, 16] in OCP's nibble
    order (element 2j low, 2j + 1 high of byte j), scales uint8 [..., R, K/32] = e)."""
    fp4 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
    b = w.float().reshape(*w.shape[:-1], w.shape[-1] // 32, 32)
    e = torch.ceil(torch.log2(b.abs().amax(-1, keepdim=True).clamp(min=2.0 ** -100) / 6.0))
    x = b / torch.exp2(e)
    idx = (x.abs()[..., None] - fp4).abs().argmin(-1)
    neg = (x < 0) & (idx > 0)
    rounded = (fp4[idx] * torch.where(neg, -1.0, 1.0) * torch.exp2(e)).reshape(w.shape)
    code = (idx + 8 * neg.long()).to(torch.uint8)
    blocks = code[..., 0::2] | (code[..., 1::2] << 4)
    return rounded, blocks.contiguous(), (e[..., 0] + 127).to(torch.uint8).contiguous()

def gpt_oss_models():
    """gpt-oss (GptOssForCausalLM): 4 layers sliding (window 8) and full alternating, attention sinks (spread 1), biases
    on q/k/v/o, 4 experts of 64 top 2 softmaxed, biased router and experts, gate/up weights large enough that the
    clamped SwiGLU's limit 7 cuts, YaRN factor 32 from 4096 untruncated (the correction range's ends not whole). The
    experts are MXFP4 values, so three fixtures hold the same weights: gpt_oss (bf16 as unsloth's BF16 checkpoints:
    gate_up_proj [E][H][2I] gate and up interleaved), gpt_oss_mxfp4 (the experts as openai's checkpoints have them,
    *_blocks and *_scales with quantization_config mxfp4; logits copied) and, from that one,
    tools/refs/convert_gpt_oss_gguf.py's gpt_oss_gguf."""
    rp = {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
          "truncate": False, "original_max_position_embeddings": 4096}
    c = transformers.GptOssConfig(vocab_size=V, hidden_size=H, intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, sliding_window=8, num_local_experts=4,
        num_experts_per_tok=2, max_position_embeddings=131072, rms_norm_eps=1e-5, tie_word_embeddings=False,
        attention_bias=True, rope_parameters=rp, layer_types=["sliding_attention", "full_attention"] * 2)
    m = perturb_ret(transformers.GptOssForCausalLM(c))
    g = torch.Generator().manual_seed(A.seed * 43)
    blocks = {}
    with torch.no_grad():
        for i, layer in enumerate(m.model.layers):
            layer.self_attn.sinks.copy_(torch.randn(layer.self_attn.sinks.shape, generator=g))
            ex = layer.mlp.experts
            gu = 0.35 * torch.randn(ex.gate_up_proj.shape, generator=g)          # [E][H][2I]
            r, bl, sc = mxfp4_round(gu.transpose(1, 2))                           # blocks along H: [E][2I][H]
            ex.gate_up_proj.copy_(r.transpose(1, 2)); blocks[f"model.layers.{i}.mlp.experts.gate_up_proj"] = (bl, sc)
            r, bl, sc = mxfp4_round(ex.down_proj.transpose(1, 2))                # [E][I][H] -> [E][H][I]
            ex.down_proj.copy_(r.transpose(1, 2)); blocks[f"model.layers.{i}.mlp.experts.down_proj"] = (bl, sc)
    hf_case("gpt_oss", m, "gpt-oss: 4 layers sliding (8) / full, sinks, q/k/v/o biases, 4 experts of 64 top 2 softmaxed, "
            "biased router and experts, clamped SwiGLU (limit 7 reached), YaRN 32 from 4096 untruncated, experts MXFP4 "
            "values", torch.bfloat16)
    d = os.path.join(A.out, "gpt_oss"); dm = os.path.join(A.out, "gpt_oss_mxfp4"); os.makedirs(dm, exist_ok=True)
    from safetensors.torch import load_file, save_file
    sd = load_file(os.path.join(d, "model.safetensors")); out = {}
    for k, v in sd.items():
        if k in blocks:
            bl, sc = blocks[k]
            assert torch.equal(v.float(), (m.state_dict()[k]).float().to(v.dtype).float()), k
            out[k + "_blocks"] = bl; out[k + "_scales"] = sc
        else: out[k] = v
    print("gpt_oss tensors:", {k: list(v.shape) for k, v in sd.items() if "layers.0." in k})
    save_file(out, os.path.join(dm, "model.safetensors"), metadata={"format": "pt"})
    cfg = json.load(open(os.path.join(d, "config.json")))
    cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    json.dump(cfg, open(os.path.join(dm, "config.json"), "w"), indent=2)
    ref = json.load(open(os.path.join(d, "ref.json"))); ref["name"] = "gpt_oss_mxfp4"
    ref["note"] = "gpt_oss's weights with the experts as MXFP4 blocks and scales (openai's form); its logits"
    json.dump(ref, open(os.path.join(dm, "ref.json"), "w"), indent=1)
    import shutil; shutil.copy(os.path.join(d, "logits.f32"), dm)
    try:  # transformers reads the blocks back to the same weights (where its MXFP4 path runs on this machine)
        mm = transformers.GptOssForCausalLM.from_pretrained(dm, dtype=torch.float32)
        a, b = m.float().state_dict(), mm.state_dict()
        bad = [k for k in a if "experts" in k and not torch.equal(a[k].to(torch.bfloat16).float(), b[k].float())]
        print("gpt_oss_mxfp4 read back by transformers:", "same experts" if not bad else f"differ: {bad[:3]}")
    except Exception as ex:
        print("gpt_oss_mxfp4: transformers did not load it here:", repr(ex)[:300])

L3 = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 32}
CASES = {
    "llama_gqa": lambda: hf_case("llama_gqa", (lambda m: (perturb(m), m)[1])(transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=3, num_attention_heads=6, num_key_value_heads=2, head_dim=H // 6,
        max_position_embeddings=4096, rope_theta=500000.0, rope_scaling=L3, tie_word_embeddings=True, rms_norm_eps=1e-5))),
        "Llama 3 style: GQA 6/2, llama3 RoPE scaling, tied embeddings"),
    "llama_mha_bf16": lambda: hf_case("llama_mha_bf16", (lambda m: (perturb(m), m)[1])(transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
        max_position_embeddings=2048, rope_theta=10000.0, tie_word_embeddings=False, rms_norm_eps=1e-6))),
        "Llama 2 style: MHA, untied lm_head", torch.bfloat16),
    "qwen2": lambda: hf_case("qwen2", (lambda m: (perturb(m), m)[1])(transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=3,
        max_position_embeddings=4096, rope_theta=1000000.0, tie_word_embeddings=False, rms_norm_eps=1e-6))), "Qwen2: q/k/v biases"),
    "qwen3": lambda: hf_case("qwen3", (lambda m: (perturb(m), m)[1])(transformers.Qwen3ForCausalLM(transformers.Qwen3Config(
        vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        max_position_embeddings=4096, rope_theta=1000000.0, tie_word_embeddings=True, rms_norm_eps=1e-6))), "Qwen3: per-head q/k RMSNorm, head_dim independent of hidden"),
    # YaRN (not yet made: no device time in the session that wrote it): factor 4 from an original 8 tokens, so the
    # sequence is past it and the ramp's both ends show (test_models' yarn_checked has the frequencies meanwhile)
    "qwen3_yarn": lambda: hf_case("qwen3_yarn", (lambda m: (perturb(m), m)[1])(transformers.Qwen3ForCausalLM(transformers.Qwen3Config(
        vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        max_position_embeddings=4096, tie_word_embeddings=True, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 8}))),
        "Qwen3 with YaRN rope scaling: factor 4 from 8 tokens, attention factor 0.1 ln 4 + 1"),
    "gemma3": lambda: hf_case("gemma3", (lambda m: (perturb(m, gemma_norm=True), m)[1])(transformers.Gemma3ForCausalLM(transformers.Gemma3TextConfig(
        vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        sliding_window=8, max_position_embeddings=4096, query_pre_attn_scalar=32,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"]))),
        "Gemma 3 text: sliding window 8 (shorter than the sequence), local/global RoPE bases, (1+w) RMSNorm, sandwich norms, GeGLU", torch.bfloat16),
    "gemma4_kv_shared": lambda: hf_case("gemma4_kv_shared", (lambda m: (perturb(m, gemma_norm=False), m)[1])(transformers.Gemma4ForCausalLM(transformers.Gemma4TextConfig(
        vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=1, head_dim=32,
        sliding_window=8, max_position_embeddings=4096, vocab_size_per_layer_input=V, hidden_size_per_layer_input=16,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2, num_kv_shared_layers=3, final_logit_softcapping=30.0))),
        "Gemma 4 text: last 3 layers reuse K/V of earlier layers (KV sharing), per-layer inputs, sliding window 8, proportional RoPE on full layers, softcap 30", torch.bfloat16),
    "gemma4_moe": lambda: hf_case("gemma4_moe", gemma4_moe_scales(gemma4_scalars(perturb_ret(transformers.Gemma4ForCausalLM(transformers.Gemma4TextConfig(
        vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        global_head_dim=64, sliding_window=8, max_position_embeddings=4096, vocab_size_per_layer_input=V, hidden_size_per_layer_input=16,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"], num_kv_shared_layers=1,
        enable_moe_block=True, num_experts=8, top_k_experts=2, moe_intermediate_size=32))))),
        "Gemma 4 text with the MoE block: 8 experts of 32 beside the dense MLP on every layer, top 2 renormalised times per_expert_scale, "
        "router scale, per-layer inputs, the last layer KV-shared, sliding window 8", torch.bfloat16),
    "gemma4_k_eq_v": lambda: hf_case("gemma4_k_eq_v", gemma4_scalars(perturb_ret(transformers.Gemma4ForCausalLM(transformers.Gemma4TextConfig(
        vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=5, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        global_head_dim=64, num_global_key_value_heads=1, attention_k_eq_v=True, use_double_wide_mlp=True, tie_word_embeddings=False,
        sliding_window=8, max_position_embeddings=4096, vocab_size_per_layer_input=V, hidden_size_per_layer_input=32,
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.5, "rope_theta": 100000.0}},
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "full_attention"],
        num_kv_shared_layers=2)))),
        "Gemma 4 text: attention_k_eq_v on full layers (1 global KV head, head_dim 64), double-wide MLP on the 2 KV-shared layers, "
        "untied lm_head, per-layer inputs 32 wide, random layer scalars, proportional RoPE with factor 0.5, window 8", torch.bfloat16),
    "gemma3_gguf": lambda: gemma3_gguf_case("gemma3_gguf"),
    "llama_kquants_gguf": lambda: llama_kquants_gguf_case("llama_kquants_gguf"),
    "llama_q4km_gguf": lambda: llama_kquants_gguf_case("llama_q4km_gguf", KQ_M, "Q4_K", "Q6_K", 15,
        "GGUF llama mixed as llama.cpp's Q4_K_M (Q4_K, Q6_K attn_v / ffn_down / output), a Q5_K_M layer whose ffn_up is Q6_K, "
        "a Q8_0 attn_output (random blocks, weights = their dequantized values); q/k rows permuted as llama.cpp writes them"),
    "llama_q4_0_q6k_gguf": lambda: llama_kquants_gguf_case("llama_q4_0_q6k_gguf", Q40_Q6K, "Q4_0", "Q6_K", 2,
        "GGUF llama as llama.cpp's Q4_0 file type writes it: Q4_0 embedding and linears, Q6_K output (random blocks, "
        "weights = their dequantized values); q/k rows permuted as llama.cpp writes them"),
    "llama_q4_0_gguf": lambda: llama_gguf_case("llama_q4_0_gguf", 6, 2, 2, False, L3),
    "qwen3_embed": lambda: qwen3_embed_case("qwen3_embed"),
    "qwen3_moe": qwen3_moe_models,   # also writes qwen3_moe_gguf and qwen3_moe_mixed
    "mixtral": mixtral_model,
    "gpt_oss": gpt_oss_models,   # also writes gpt_oss_mxfp4
    # the short factors (the sequence stays under the original 4096; attention factor sqrt(1 + ln 2 / ln 4096))
    "phi3": lambda: phi3_model("phi3", 6, 2, 1.0, 4096, 8192, None, False,
                               "Phi-3: fused qkv_proj and gate_up_proj, longrope short factors, GQA 6/2, untied"),
    # the long factors (the prompt alone passes the original 16), partial rotary 0.75, tied
    "phi4_mini": lambda: phi3_model("phi4_mini", 4, 2, 0.75, 16, 4096, None, True,
                                    "Phi-4-mini: partial rotary 0.75, longrope long factors (original 16 tokens), tied"),
    # a sliding window of 8 on every layer (Phi-3-mini's config names 2047)
    "phi3_window": lambda: phi3_model("phi3_window", 6, 2, 1.0, 4096, 8192, 8, False,
                                      "Phi-3 with sliding_window 8 (shorter than the sequence)"),
}
for n in (A.only.split(",") if A.only else CASES):
    CASES[n]()
