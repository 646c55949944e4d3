#!/usr/bin/env python3
"""Trains wgllm's bundled default model: a 3.7M-parameter Llama on the King James Bible, with a Llama-3 style
byte-level BPE tokenizer (2048 tokens), and exports it as a Hugging Face directory (f16 safetensors) and a
GGUF (Q8_0), with reference logits for both and sample text.

    python3 tools/train_default/train.py --data kjv.txt --out OUTDIR [--steps N] [--minutes 4] [--seed S]

Needs CUDA, torch, transformers (5.x), tokenizers and numpy; no network. --steps 0 (the default) fits the
number of steps to --minutes of training after timing the first steps; an explicit --steps is still cut at
the wall-clock budget. The weights with the best validation loss (checked every --eval-every steps) are
exported. OUTDIR receives:
    tokenizer.json, tokenizer_config.json
    hf/            config.json, model.safetensors (float16), tokenizer.json, tokenizer_config.json
    model.gguf     GGUF v3 as llama.cpp writes a Llama (Q8_0 linears/embedding, F32 norms, gpt2/llama-bpe vocab)
    ref/           ref.json + logits.f32 of hf/ reloaded in float32 (transformers, CPU)
    ref_gguf/      the same for the GGUF's weights (Q8_0 dequantized into the model)
    samples.txt    greedy and sampled continuations of three prompts
    train_log.json steps, losses, timings, sizes
"""
import argparse
import copy
import json
import math
import os
import shutil
import sys
import time
import traceback

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "gguf"))   # tools/gguf/gguf_writer.py
import gguf_writer as gw  # noqa: E402

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
BOS_TEXT, EOS_TEXT = "<|begin_of_text|>", "<|end_of_text|>"
VOCAB = 2048
ARCH = dict(vocab_size=VOCAB, hidden_size=256, intermediate_size=768, num_hidden_layers=4, num_attention_heads=8,
            num_key_value_heads=4, head_dim=32, max_position_embeddings=512, rope_theta=10000.0, rms_norm_eps=1e-5)
REF_PROMPT = "And God said, Let there be light: and there was"
REF_DECODE_STEPS = 8
SAMPLE_PROMPTS = ["In the beginning", "And Jesus said unto them,", "The LORD is my shepherd;"]
SAMPLE_NEW_TOKENS = 60

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--data", required=True, help="corpus: one verse per line (tools/train_default/fetch_data.sh)")
ap.add_argument("--out", required=True)
ap.add_argument("--steps", type=int, default=0, help="optimizer steps; 0: as many as --minutes allows")
ap.add_argument("--minutes", type=float, default=4.0, help="wall-clock budget of the training loop (0: none)")
ap.add_argument("--seed", type=int, default=1234)
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--seq", type=int, default=256)
ap.add_argument("--lr", type=float, default=2e-3)
ap.add_argument("--warmup", type=int, default=100)
ap.add_argument("--eval-every", type=int, default=500)
ap.add_argument("--log-every", type=int, default=200)
ap.add_argument("--export-best", action="store_true",
                help="export the weights with the best validation loss instead of the last ones (the model overfits "
                     "the 1.1M-token corpus after a few epochs: the last weights recite verses, the best-validation "
                     "ones generalize better but write less fluent text)")
A = ap.parse_args()

T_START = time.time()
WARNINGS = []


def say(msg):
    print(f"[{time.time() - T_START:7.1f}s] {msg}", flush=True)


def warn(msg):
    WARNINGS.append(msg)
    say("WARNING: " + msg)


def write_json(path, obj):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def write_text(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def fresh_dir(path):
    """A temporary sibling directory; commit_dir(tmp, path) swaps it in."""
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    return tmp


def commit_dir(tmp, path):
    old = path + ".old"
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(path):
        os.rename(path, old)
    os.rename(tmp, path)
    shutil.rmtree(old, ignore_errors=True)


assert torch.cuda.is_available(), "CUDA is required"
DEV = torch.device("cuda")
torch.manual_seed(A.seed)
np.random.seed(A.seed)
os.makedirs(A.out, exist_ok=True)

import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

try:
    transformers.utils.logging.disable_progress_bar()   # "Loading weights" / "Writing model shards" bars
except Exception:  # noqa: BLE001
    pass
say(f"torch {torch.__version__}, transformers {transformers.__version__}, tokenizers {tokenizers.__version__}, "
    f"numpy {np.__version__}, {torch.cuda.get_device_name(0)}")
LOG = {"versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                    "tokenizers": tokenizers.__version__, "numpy": np.__version__},
       "device": torch.cuda.get_device_name(0), "args": vars(A)}

# ================================================================ corpus
with open(A.data, encoding="utf-8") as f:
    lines = [ln.rstrip("\r") for ln in f.read().split("\n")]
lines = [ln for ln in lines if ln.strip()]
assert len(lines) > 1000, f"{A.data}: only {len(lines)} lines"
texts = [ln + "\n" for ln in lines]   # each verse followed by a newline, as in the training stream
n_bytes = sum(len(t.encode("utf-8")) for t in texts)
say(f"corpus {A.data}: {len(lines)} verses, {n_bytes} bytes")

# ================================================================ tokenizer
tok = Tokenizer(models.BPE(byte_fallback=False))
tok.pre_tokenizer = pre_tokenizers.Sequence([
    pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
    pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=VOCAB - 2, min_frequency=2, show_progress=False,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
assert tok.get_vocab_size(with_added_tokens=False) == VOCAB - 2, tok.get_vocab_size(with_added_tokens=False)
# The special tokens come last, as in Llama 3 (ids VOCAB-2, VOCAB-1).
tok.add_special_tokens([AddedToken(BOS_TEXT, special=True, normalized=False),
                        AddedToken(EOS_TEXT, special=True, normalized=False)])
BOS, EOS = tok.token_to_id(BOS_TEXT), tok.token_to_id(EOS_TEXT)
assert (BOS, EOS) == (VOCAB - 2, VOCAB - 1), (BOS, EOS)
assert tok.get_vocab_size(with_added_tokens=True) == VOCAB
tok.post_processor = processors.TemplateProcessing(
    single=f"{BOS_TEXT} $A", pair=f"{BOS_TEXT} $A {BOS_TEXT} $B:1", special_tokens=[(BOS_TEXT, BOS)])
# ignore_merges as in Llama 3's tokenizer.json: llama.cpp (and wgllm's GGUF tokenizer) use it for
# tokenizer.ggml.pre = "llama-bpe", so the HF and GGUF tokenizers agree on every input.
tj = json.loads(tok.to_str())
tj["model"]["ignore_merges"] = True
tj["model"]["byte_fallback"] = False
tok = Tokenizer.from_str(json.dumps(tj))
tj = json.loads(tok.to_str())
assert tj["model"].get("ignore_merges") is True, "this tokenizers version dropped ignore_merges"
assert tj["model"]["type"] == "BPE" and len(tj["model"]["merges"]) >= VOCAB - 2 - 256, len(tj["model"]["merges"])

enc = tok.encode(lines[0])
assert enc.ids[0] == BOS and BOS not in enc.ids[1:], enc.ids[:5]
assert tok.decode(enc.ids, skip_special_tokens=True) == lines[0]
encs = tok.encode_batch(texts, add_special_tokens=False)
ids_per_verse = [e.ids for e in encs]
dec = tok.decode_batch(ids_per_verse, skip_special_tokens=False)
bad = [i for i, (a, b) in enumerate(zip(dec, texts)) if a != b]
assert not bad, f"{len(bad)} verses do not round-trip, e.g. {texts[bad[0]]!r} -> {dec[bad[0]]!r}"
joined = tok.encode("".join(texts[:200]), add_special_tokens=False).ids
if joined != [i for v in ids_per_verse[:200] for i in v]:
    warn("encoding verses one by one differs from encoding the joined text (verse starts are approximate)")

tok_path = os.path.join(A.out, "tokenizer.json")
tok.save(tok_path + ".tmp", pretty=True)
os.replace(tok_path + ".tmp", tok_path)
TOK_CONFIG = {"bos_token": BOS_TEXT, "eos_token": EOS_TEXT, "add_bos_token": True, "model_max_length": 512,
              "tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False}
write_json(os.path.join(A.out, "tokenizer_config.json"), TOK_CONFIG)

# Encodings for the engine's tokenizer tests: verses and some awkward strings, with bos as the template adds it.
rng_chk = np.random.default_rng(A.seed)
chk_texts = [REF_PROMPT] + SAMPLE_PROMPTS + lines[:20] + [lines[i] for i in rng_chk.choice(len(lines), 80, replace=False)] + [
    "", " ", "\n", "  two  spaces\n\nand a blank line", "Numbers 1234567 and 3:16, 144,000!", "it's I'LL we'd they've",
    "tabs\tand\r\nCRLF", "Ünïcödé — “quotes” naïve café 日本語 🙂", "<|begin_of_text|> written in text", "a" * 50]
write_json(os.path.join(A.out, "tokenizer_check.json"),
           {"note": "ids that tokenizer.json gives (HF tokenizers, add_special_tokens=True: bos first; special "
                    "tokens written in the text are recognized, i.e. parse_special) for each text",
            "cases": [{"text": t, "ids": tok.encode(t).ids} for t in chk_texts]})

stream = np.fromiter((i for v in ids_per_verse for i in v), dtype=np.int64)
lens = np.array([len(v) for v in ids_per_verse], dtype=np.int64)
starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
N_TOK = len(stream)
assert stream.max() < VOCAB - 2 and stream.min() >= 0
say(f"tokenizer: {VOCAB} tokens (bos {BOS}, eos {EOS}), corpus {N_TOK} tokens, {n_bytes / N_TOK:.2f} bytes/token")
LOG["tokenizer"] = {"vocab": VOCAB, "bos": BOS, "eos": EOS, "merges": len(tj["model"]["merges"]),
                    "corpus_tokens": int(N_TOK), "bytes_per_token": n_bytes / N_TOK}

# ================================================================ train / validation split
SEQ, B = A.seq, A.batch
v0 = int(np.searchsorted(starts, int(0.98 * N_TOK)))     # first validation verse
split = int(starts[v0])
train_ids, val_ids = stream[:split], stream[split:]
train_starts = starts[:v0]
train_starts = train_starts[train_starts + SEQ <= split]
val_starts = starts[v0:] - split
assert len(train_starts) > 1000 and len(val_ids) > 4 * SEQ, (len(train_starts), len(val_ids))
# validation windows: [BOS] + SEQ tokens, each starting at a verse start, not overlapping
vw, nxt = [], 0
for s in val_starts:
    if s >= nxt and s + SEQ <= len(val_ids):
        vw.append(s)
        nxt = s + SEQ
vw = np.array(vw, dtype=np.int64)
VX = torch.from_numpy(np.stack([np.concatenate([[BOS], val_ids[s:s + SEQ - 1]]) for s in vw])).to(DEV)
VY = torch.from_numpy(np.stack([val_ids[s:s + SEQ] for s in vw])).to(DEV)
say(f"split: train {len(train_ids)} tokens ({v0} verses), validation {len(val_ids)} tokens "
    f"({len(lines) - v0} verses from: {lines[v0][:50]!r}), {len(vw)} validation windows")
LOG["data"] = {"train_tokens": int(len(train_ids)), "val_tokens": int(len(val_ids)), "val_windows": int(len(vw)),
               "val_tokens_scored": int(VY.numel()), "train_verses": int(v0), "val_verses": len(lines) - int(v0)}

TRAIN = torch.from_numpy(train_ids).to(DEV)
TSTARTS = torch.from_numpy(train_starts).to(DEV)
OFFS = torch.arange(SEQ, device=DEV)
BOS_COL = torch.full((B, 1), BOS, dtype=torch.long, device=DEV)
GEN = torch.Generator(device=DEV)
GEN.manual_seed(A.seed)


def get_batch():
    """B windows [BOS] + SEQ tokens starting at random verse starts: x = window[:-1], y = window[1:]."""
    s = TSTARTS[torch.randint(len(TSTARTS), (B,), device=DEV, generator=GEN)]
    toks = TRAIN[s[:, None] + OFFS[None, :]]
    return torch.cat([BOS_COL, toks[:, :-1]], 1), toks


@torch.no_grad()
def evaluate(m, autocast=True):
    was = m.training
    m.eval()
    tot, n = 0.0, 0
    for i in range(0, len(VX), 64):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            lg = m(input_ids=VX[i:i + 64], use_cache=False).logits
        tot += F.cross_entropy(lg.float().reshape(-1, lg.shape[-1]), VY[i:i + 64].reshape(-1), reduction="sum").item()
        n += VY[i:i + 64].numel()
    m.train(was)
    return tot / n


# ================================================================ model
cfg = LlamaConfig(**ARCH, tie_word_embeddings=True, bos_token_id=BOS, eos_token_id=EOS)
model = LlamaForCausalLM(cfg).to(DEV)
model.train()
assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(), "embeddings are not tied"
H, I, NL = ARCH["hidden_size"], ARCH["intermediate_size"], ARCH["num_hidden_layers"]
NH, NKV, HD = ARCH["num_attention_heads"], ARCH["num_key_value_heads"], ARCH["head_dim"]
N_PARAMS = sum(p.numel() for p in model.parameters())
want = VOCAB * H + H + NL * (2 * H + H * NH * HD * 2 + 2 * H * NKV * HD + 3 * H * I)
assert N_PARAMS == want, (N_PARAMS, want)
say(f"model: LlamaForCausalLM {NL} layers, hidden {H}, ffn {I}, heads {NH}/{NKV} x {HD}, {N_PARAMS} params")
LOG["params"] = N_PARAMS

decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
try:
    opt = torch.optim.AdamW(groups, lr=A.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
except Exception as e:  # noqa: BLE001
    warn(f"fused AdamW unavailable ({e}); using the default implementation")
    opt = torch.optim.AdamW(groups, lr=A.lr, betas=(0.9, 0.95), eps=1e-8)


def lr_at(step, total):
    if step < A.warmup:
        return A.lr * (step + 1) / A.warmup
    p = min(1.0, (step - A.warmup) / max(1, total - A.warmup))
    return A.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))


# ================================================================ training
BUDGET = A.minutes * 60 if A.minutes > 0 else float("inf")
CAP = A.steps if A.steps > 0 else 200000
total = CAP
CAL0, CAL1 = 50, max(400, A.warmup + 50)  # steps timed to fit --steps 0 to the budget (before the first eval)
history, val_history = [], []
best_val, best_step, best_state = float("inf"), -1, None
acc, acc_n = torch.zeros((), device=DEV), 0
last_train_loss = float("nan")
say(f"training: batch {B} x {SEQ}, lr {A.lr} (warmup {A.warmup}, cosine to 10%), budget "
    f"{'none' if BUDGET == float('inf') else f'{BUDGET:.0f}s'}, steps {'auto' if A.steps <= 0 else A.steps}")
torch.cuda.synchronize()
t0 = time.time()
step = 0
while step < total:
    lr = lr_at(step, total)
    for g in opt.param_groups:
        g["lr"] = lr
    x, y = get_batch()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(input_ids=x, use_cache=False).logits
    loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    acc += loss.detach()
    acc_n += 1
    step += 1

    if A.steps <= 0 and step in (CAL0, CAL1):
        torch.cuda.synchronize()
        if step == CAL0:
            t_cal = time.time()
        else:
            per = (time.time() - t_cal) / (CAL1 - CAL0)
            left = BUDGET - (time.time() - t0)
            # evaluations cost about one step per validation batch
            per_eval = per * (len(VX) / 64 + 1) / A.eval_every
            total = min(CAP, step + max(0, int(0.97 * left / (per + per_eval)))) if BUDGET < float("inf") else CAP
            say(f"timing: {per * 1000:.1f} ms/step ({B * SEQ / per / 1e6:.2f}M tokens/s) -> {total} steps")
    if step % A.log_every == 0 or step == total:
        last_train_loss = (acc / acc_n).item()
        history.append([step, last_train_loss])
        el = time.time() - t0
        say(f"step {step:6d}/{total}  train loss {last_train_loss:.4f}  lr {lr:.2e}  "
            f"{step * B * SEQ / el / 1e6:.2f}M tok/s")
        acc.zero_()
        acc_n = 0
    if step % A.eval_every == 0 or step == total:
        vl = evaluate(model)
        val_history.append([step, vl])
        if vl < best_val:
            best_val, best_step = vl, step
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        say(f"step {step:6d}  val loss {vl:.4f}  (best {best_val:.4f} at {best_step})")
    if time.time() - t0 > BUDGET * 1.02 + 2:
        say(f"wall-clock budget reached at step {step}")
        break
if acc_n:
    last_train_loss = (acc / acc_n).item()
    history.append([step, last_train_loss])
torch.cuda.synchronize()
TRAIN_SECONDS = time.time() - t0
val_last = evaluate(model)
if not val_history or val_history[-1][0] != step:
    val_history.append([step, val_last])
if val_last < best_val:
    best_val, best_step, best_state = val_last, step, None
if best_state is not None and A.export_best:
    model.load_state_dict(best_state)
    say(f"exporting the best-validation weights of step {best_step} (last step {step}: val {val_last:.4f})")
    best_state = None
elif best_state is not None:
    say(f"exporting the last weights (step {step}, val {val_last:.4f}); the best validation loss was "
        f"{best_val:.4f} at step {best_step} (samples of both in samples.txt)")
exported_step = best_step if A.export_best else step
val_export = evaluate(model)
say(f"done: {step} steps in {TRAIN_SECONDS:.1f}s, train loss {last_train_loss:.4f}, "
    f"val loss {val_export:.4f} nats/token (exported weights, step {exported_step})")
LOG.update({"steps": step, "exported_step": exported_step, "final_train_loss": last_train_loss,
            "val_loss": val_export, "val_loss_last_step": val_last, "best_val_step": best_step,
            "best_val_loss": best_val, "train_seconds": TRAIN_SECONDS, "tokens_seen": step * B * SEQ,
            "epochs": step * B * SEQ / len(train_ids), "train_loss_history": history, "val_loss_history": val_history})
write_json(os.path.join(A.out, "train_log.json"), {**LOG, "warnings": WARNINGS, "complete": False})

# ================================================================ Hugging Face export (float16)
hf_final = os.path.join(A.out, "hf")
hf_tmp = fresh_dir(hf_final)
m16 = copy.deepcopy(model).to(torch.float16).cpu().eval()
m16.save_pretrained(hf_tmp, safe_serialization=True)
for extra in ("generation_config.json",):
    if os.path.exists(os.path.join(hf_tmp, extra)):
        os.remove(os.path.join(hf_tmp, extra))
shutil.copy(tok_path, os.path.join(hf_tmp, "tokenizer.json"))
write_json(os.path.join(hf_tmp, "tokenizer_config.json"), TOK_CONFIG)
assert os.path.exists(os.path.join(hf_tmp, "model.safetensors")), os.listdir(hf_tmp)
commit_dir(hf_tmp, hf_final)
say(f"hf/: {sorted(os.listdir(hf_final))}, model.safetensors "
    f"{os.path.getsize(os.path.join(hf_final, 'model.safetensors'))} bytes")

# Reload in float32: the reference for everything below (the in-memory model's .half() also rounded buffers).
ref = LlamaForCausalLM.from_pretrained(hf_final, dtype=torch.float32).eval()
with torch.no_grad():
    ref_sd = ref.state_dict()
    for k, v in m16.state_dict().items():
        assert k in ref_sd and torch.equal(ref_sd[k], v.float()), f"reloaded {k} differs from the saved float16 weights"
    assert torch.equal(ref.lm_head.weight, ref.model.embed_tokens.weight), "reloaded lm_head is not the embedding"
del m16
val_f16 = evaluate(copy.deepcopy(ref).to(DEV), autocast=False)
say(f"reloaded hf/ (float16 weights, float32 compute): val loss {val_f16:.4f}")
LOG["val_loss_hf_f16_fp32"] = val_f16

try:   # how transformers itself loads the tokenizer (non-fatal: the files are what the engine reads)
    from transformers import AutoTokenizer
    at = AutoTokenizer.from_pretrained(hf_final)
    for t in [REF_PROMPT] + SAMPLE_PROMPTS + lines[:50]:
        a, b = at(t)["input_ids"], tok.encode(t).ids
        if a != b:
            warn(f"AutoTokenizer gives {a[:8]}... for {t[:30]!r}, tokenizers gives {b[:8]}...")
            break
    else:
        say(f"AutoTokenizer ({type(at).__name__}) agrees with tokenizer.json")
except Exception as e:  # noqa: BLE001
    warn(f"AutoTokenizer check failed: {type(e).__name__}: {e}")

# ================================================================ GGUF export (Q8_0)
sd = {k: v.detach().float().numpy() for k, v in ref.state_dict().items()}
hp = {**ARCH}
tok_arrays = gw.tokenizer_arrays(tj, BOS_TEXT, EOS_TEXT)
assert tok_arrays["tokens"][BOS] == BOS_TEXT and tok_arrays["token_types"][BOS] == 3 and tok_arrays["token_types"][EOS] == 3
assert sum(t == 3 for t in tok_arrays["token_types"]) == 2 and len(tok_arrays["tokens"]) == VOCAB
gguf_path = os.path.join(A.out, "model.gguf")
gsize, deq = gw.export_llama_gguf(gguf_path, hp, sd, tok_arrays, "wgllm-default-kjv")

# Read it back: metadata and every quantized tensor against what the reference below uses.
kv, gts = gw.read_gguf(gguf_path)
assert kv["general.architecture"] == "llama" and kv["llama.block_count"] == NL and kv["llama.vocab_size"] == VOCAB
assert kv["tokenizer.ggml.tokens"] == tok_arrays["tokens"] and kv["tokenizer.ggml.merges"] == tok_arrays["merges"]
assert "output.weight" not in gts and len(gts) == 2 + 9 * NL, sorted(gts)


def deq_q8_0(data, ne):
    a = np.frombuffer(data, dtype=np.uint8).reshape(-1, gw.Q8_0_BLOCK_BYTES)
    d = a[:, :2].copy().view(np.float16).astype(np.float32)
    return (a[:, 2:].view(np.int8).astype(np.float32) * d).reshape(ne[1], ne[0])


for gname, hname, perm_heads in [("token_embd", "model.embed_tokens", None)] + [
        (f"blk.{i}.{g}", f"model.layers.{i}.{h}", NH if g == "attn_q" else NKV if g == "attn_k" else None)
        for i in range(NL) for h, g in gw.HF_LINEARS]:
    gtype, ne, data = gts[gname + ".weight"]
    assert gtype == gw.GGML_Q8_0, gname
    w = deq_q8_0(data, ne)
    dq, orig = deq[hname + ".weight"], sd[hname + ".weight"]
    assert np.array_equal(w, gw.permute_rows_np(dq, perm_heads) if perm_heads else dq), \
        f"{gname}: GGUF data differs from the dequantized reference"
    assert np.abs(dq - orig).max() <= np.abs(orig).max() / 127 * 0.6, f"{gname}: Q8_0 error too large"
say(f"model.gguf: {gsize} bytes, {len(gts)} tensors, {len(kv)} keys (read back and checked)")

gmodel = copy.deepcopy(ref)
with torch.no_grad():
    gsd = gmodel.state_dict()
    for k, v in deq.items():
        gsd[k].copy_(torch.from_numpy(np.ascontiguousarray(v)))
    if "lm_head.weight" in gsd:
        gsd["lm_head.weight"].copy_(torch.from_numpy(np.ascontiguousarray(deq["model.embed_tokens.weight"])))
    assert torch.equal(gmodel.lm_head.weight, gmodel.model.embed_tokens.weight)
    assert not torch.equal(gmodel.model.layers[0].mlp.up_proj.weight, ref.model.layers[0].mlp.up_proj.weight)
gmodel.eval()
val_q8 = evaluate(copy.deepcopy(gmodel).to(DEV), autocast=False)
say(f"GGUF weights (Q8_0 dequantized, float32 compute): val loss {val_q8:.4f}")
LOG["val_loss_gguf_q8_0_fp32"] = val_q8
LOG["gguf_bytes"] = gsize


# ================================================================ reference logits (as make_refs.py's write_ref)
def write_ref(d_final, name, m, prompt_ids, note):
    d = fresh_dir(d_final)
    T, N = len(prompt_ids), REF_DECODE_STEPS
    prompt = torch.tensor([prompt_ids])
    with torch.no_grad():
        rows = list(m(prompt, use_cache=False).logits[0].float())
        out = m(prompt, use_cache=True)
        past, last, gen = out.past_key_values, out.logits[0, -1].float(), []
        for _ in range(N):
            nxt = int(torch.argmax(last))
            gen.append(nxt)
            out = m(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
            past, last = out.past_key_values, out.logits[0, -1].float()
            rows.append(last)
    L = torch.stack(rows)
    assert L.shape == (T + N, VOCAB) and torch.isfinite(L).all(), L.shape
    L.numpy().astype("<f4").tofile(os.path.join(d, "logits.f32"))
    top2 = L.topk(2).values
    r = {"name": name, "arch": type(m).__name__, "prompt_text": REF_PROMPT, "prompt_ids": list(prompt_ids),
         "greedy_ids": gen, "greedy_text": tok.decode(gen), "logits_file": "logits.f32", "logits_shape": [T + N, VOCAB],
         "min_top1_margin": float((top2[:, 0] - top2[:, 1]).min()), "transformers": transformers.__version__,
         "seed": A.seed, "note": note}
    write_json(os.path.join(d, "ref.json"), r)
    commit_dir(d, d_final)
    say(f"{name}: T={T}, greedy {gen} {tok.decode(gen)!r}, min top-1 margin {r['min_top1_margin']:.4f}")
    return r


prompt_ids = tok.encode(REF_PROMPT).ids
assert prompt_ids[0] == BOS and len(prompt_ids) >= 4, prompt_ids
if len(prompt_ids) != 20:
    say(f"note: the reference prompt is {len(prompt_ids)} tokens with bos (not 20)")
r1 = write_ref(os.path.join(A.out, "ref"), "default_kjv_hf", ref, prompt_ids,
               "wgllm default model (hf/, float16 safetensors) reloaded in float32; rows 0..T-1 full prefill, "
               "rows T.. decode steps fed greedy_ids one by one on the prompt's KV cache")
r2 = write_ref(os.path.join(A.out, "ref_gguf"), "default_kjv_gguf", gmodel, prompt_ids,
               "wgllm default model (model.gguf): the hf/ weights with every Q8_0 tensor (token_embd, attention and "
               "FFN linears) dequantized, float32; attn_q/attn_k rows are permuted in the file for adjacent-pair RoPE")
LOG["ref"] = {"prompt_ids": prompt_ids, "greedy_hf": r1["greedy_ids"], "greedy_gguf": r2["greedy_ids"],
              "min_top1_margin_hf": r1["min_top1_margin"], "min_top1_margin_gguf": r2["min_top1_margin"]}


# ================================================================ samples
def sample_manual(m, ids, greedy, seed):
    """Fallback if generate() misbehaves: plain loop, temperature 0.8, top-k 40."""
    g = torch.Generator().manual_seed(seed)
    x = torch.tensor([ids])
    with torch.no_grad():
        for _ in range(SAMPLE_NEW_TOKENS):
            lg = m(x, use_cache=False).logits[0, -1].float()
            if greedy:
                nxt = int(lg.argmax())
            else:
                v, ix = (lg / 0.8).topk(40)
                nxt = int(ix[torch.multinomial(torch.softmax(v, -1), 1, generator=g)])
            x = torch.cat([x, torch.tensor([[nxt]])], 1)
    return x[0, len(ids):].tolist()


def samples(m, title):
    out = [f"# {title}", ""]
    for p in SAMPLE_PROMPTS:
        ids = tok.encode(p).ids
        for mode in ("greedy", "sampled (temperature 0.8, top_k 40, seed 1)"):
            greedy = mode == "greedy"
            try:
                x = torch.tensor([ids])
                torch.manual_seed(1)
                kw = dict(do_sample=False) if greedy else dict(do_sample=True, temperature=0.8, top_k=40, top_p=1.0)
                with torch.no_grad():
                    o = m.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=SAMPLE_NEW_TOKENS,
                                   min_new_tokens=SAMPLE_NEW_TOKENS, pad_token_id=EOS, **kw)
                new = o[0, len(ids):].tolist()
            except Exception as e:  # noqa: BLE001
                warn(f"generate failed ({type(e).__name__}: {e}); sampling with a plain loop")
                new = sample_manual(m, ids, greedy, 1)
            text = tok.decode(new, skip_special_tokens=True)
            out += [f"## {p!r}, {mode}", p + text, ""]
            say(f"sample {mode.split()[0]}: {(p + text)[:150]!r}")
    return out


out_lines = samples(ref, f"wgllm default model (step {exported_step}, val loss {val_export:.4f}): samples, "
                         f"{SAMPLE_NEW_TOKENS} new tokens, hf/ weights in float32, transformers generate")
if best_state is not None and best_step != exported_step:
    alt = copy.deepcopy(ref)
    alt.load_state_dict({k: v.float().cpu() for k, v in best_state.items()})
    out_lines += ["", ""] + samples(alt, f"for comparison, NOT exported: the best-validation weights (step {best_step}, "
                                         f"val loss {best_val:.4f}; train.py --export-best exports these)")
write_text(os.path.join(A.out, "samples.txt"), "\n".join(out_lines))

LOG["total_seconds"] = time.time() - T_START
LOG["sizes"] = {}
for root, _, files in os.walk(A.out):
    for fn in files:
        pth = os.path.join(root, fn)
        LOG["sizes"][os.path.relpath(pth, A.out)] = os.path.getsize(pth)
LOG["warnings"] = WARNINGS
LOG["complete"] = True
write_json(os.path.join(A.out, "train_log.json"), LOG)
say(f"wrote {A.out}: {sum(LOG['sizes'].values()) / 1e6:.1f} MB; FINAL_TRAIN_LOSS={last_train_loss:.4f} "
    f"FINAL_VAL_LOSS={val_export:.4f} TRAIN_SECONDS={TRAIN_SECONDS:.0f} ({len(WARNINGS)} warnings)")
