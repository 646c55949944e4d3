/* Fuzz harness: a safetensors file from untrusted bytes (the u64 header length, the JSON header, the data
   section). The input becomes model.safetensors in a private /tmp directory beside a fixed config.json of a
   tiny Llama (vocabulary 8, hidden 4, one layer), and the directory goes through st_open_dir as a Hugging Face
   model would. On success: the tensor table (names findable, shapes and byte counts consistent, data inside
   the file, every tensor converted to f32), then llm_read_hparams, which checks each expected tensor's shape
   against the config (the seeds hold a matching model, so mutations reach the shape checks). */
#include "fuzz_util.h"
#include "model.h"
#include "safetensors.h"
#include <stdlib.h>
#include <string.h>

static const char CONFIG[] =
    "{\"model_type\": \"llama\", \"vocab_size\": 8, \"hidden_size\": 4, \"num_hidden_layers\": 1,\n"
    " \"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"intermediate_size\": 4, \"head_dim\": 2,\n"
    " \"rms_norm_eps\": 1e-5, \"tie_word_embeddings\": true, \"bos_token_id\": 1, \"eos_token_id\": 2}\n";

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *dir;
  if (!dir) {
    dir = fuzz_tmpdir();
    fuzz_write_file(dir, "config.json", CONFIG, sizeof CONFIG - 1);
  }
  fuzz_write_file(dir, "model.safetensors", data, size);
  llm_err err = {0};
  wt_store *st = NULL;
  wgllm_status s = st_open_dir(dir, &st, &err);
  if (s != WGLLM_OK) {
    fuzz_note("st_open_dir: %s", err.msg);
    FUZZ_CHECK(st == NULL && err.msg[0], "st_open_dir failed (status %d) without a message or left a store", s);
    return 0;
  }
  FUZZ_CHECK(wt_store_format(st) == WT_FORMAT_SAFETENSORS && wt_config(st) != NULL, "not a safetensors store");
  /* the data section starts after the header; every tensor must lie inside the file */
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--)
    hlen = hlen << 8 | data[i];
  for (size_t i = 0; i < wt_count(st); i++) {
    const wt_tensor *t = wt_at(st, i);
    FUZZ_CHECK(t && t->name && wt_find(st, t->name) == t, "tensor %zu: not found by its name", i);
    FUZZ_CHECK(t->n_dims >= 0 && t->n_dims <= 4 && wt_traits(t->dtype), "tensor '%s': %d dims", t->name, t->n_dims);
    int64_t numel = wt_numel(t);
    FUZZ_CHECK(numel >= 0 && t->nbytes == wt_nbytes(t->dtype, numel), "tensor '%s': %lld elements in %llu bytes",
               t->name, (long long)numel, (unsigned long long)t->nbytes);
    FUZZ_CHECK(t->file_offset >= 8 + hlen && t->file_offset <= size && t->nbytes <= size - t->file_offset,
               "tensor '%s': bytes %llu..+%llu outside the data section of the %zu-byte file", t->name,
               (unsigned long long)t->file_offset, (unsigned long long)t->nbytes, size);
    FUZZ_CHECK(!memcmp(t->data, data + t->file_offset, (size_t)t->nbytes), "tensor '%s': data not at its offset",
               t->name);
    if (numel > 0 && numel <= 1 << 16) {
      float *f = malloc((size_t)numel * sizeof *f);
      FUZZ_CHECK(f != NULL, "out of memory");
      FUZZ_CHECK(wt_traits(t->dtype)->to_f32(t->data, f, numel, &err) == WGLLM_OK, "tensor '%s': %s", t->name, err.msg);
      sink += f[numel - 1] == f[numel - 1];
      free(f);
    }
  }
  llm_hparams hp;
  err.msg[0] = 0;
  if (llm_read_hparams(st, &hp, &err) == WGLLM_OK) {
    FUZZ_CHECK(hp.n_layer == 1 && hp.n_embd == 4 && hp.n_vocab == 8, "hyperparameters changed");
    llm_hparams_free(&hp);
  } else {
    fuzz_note("llm_read_hparams: %s", err.msg);
    FUZZ_CHECK(err.msg[0], "llm_read_hparams failed without a message");
  }
  wt_store_free(st);
  return 0;
}
