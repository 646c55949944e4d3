/* Jobs: generations stepped by the caller, one at a time or several of one model together, and the step policy
   for several: a job still prefilling takes a chunk of its prompt, the decoding jobs that can share one forward pass
   take a batched step (batch.h), the others a pipelined step of their own. The public API's jobs (wgllm_job_*) and
   its whole-generation calls are a handle around one of these. */
#ifndef WGLLM_JOBS_H
#define WGLLM_JOBS_H
#include "batch.h"
#include "generate.h"
#include "llm_err.h"
#include "wgllm.h"

/* What stepping several jobs of one model keeps between calls: the batched decode (made on first use) and
   whether this model batches at all. */
typedef struct llm_job_stepper {
  llm_model *m;
  llm_batch *batch;
  int no_batch; /* asked for, or the batch could not be made */
  int no_prefill_batch; /* the model's batched prefill cannot be recorded (prompts prefill one job at a time) */
  /* the jobs of the batched step left in flight by the last call (its submit's order): it runs while the caller
     does its work between calls; the next call queues the step after it before collecting it */
  struct llm_job *flying[LLM_BATCH_MAX];
  uint32_t n_flying;
  uint32_t overlapped; /* batched steps queued behind one in flight (tests read it) */
} llm_job_stepper;

typedef struct llm_job {
  llm_session *s;
  llm_gen g;                 /* its generation: g.st is the first failure, its message in s->err */
  uint32_t n_prompt, cached; /* the prompt's tokens, of which the cache already held the first `cached` */
  uint32_t batched;          /* tokens that came from batched steps */
  uint32_t prefilled_together; /* prompt tokens prefilled in a pass with other jobs' (llm_prefill_batch) */
  int decodes;               /* llm_jobs_step: this call decodes its next token (it took one, and is not prefilling) */
  llm_job_stepper *flying;   /* the stepper whose batched step in flight holds this job's next token, or NULL */
  /* on a KV pool: when it started (older jobs keep their blocks under pressure), whether this call leaves it
     waiting for blocks, and how often it was evicted (preempted) and recomputed */
  uint64_t order;
  int waits;
  uint32_t preemptions;
} llm_job;

#define LLM_MAX_LOGIT_BIAS 4096 /* entries of a logit bias */
/* Checks the public generation parameters and converts them (err says which one is out of range). A seed of
   WGLLM_SEED_RANDOM is drawn here from the system's entropy. */
wgllm_status llm_gen_params_from_public(const wgllm_generate_params *p, llm_gen_params *gp, llm_err *err);

/* Starts a job on s from the prompt ids[0..n) (at least one token, fewer than the context, each in the
   vocabulary), keeping the prefix of it the cache already holds except its last token (whose logits are needed);
   the prompt is prefilled by the first steps. A job not started leaves j empty and says why in err. */
wgllm_status llm_job_start(llm_job *j, llm_session *s, const tokenizer *tok, const int32_t *ids, size_t n,
                           const llm_gen_params *gp, llm_err *err);
/* One step of one job: its whole prompt the first time (and its first token), else its next token, with up to two
   steps queued so the GPU runs the next while the CPU takes this one. *done (may be NULL) says whether it ended.
   Returns j->g.st. */
wgllm_status llm_job_step(llm_job *j, int *done);
/* One step of each of jobs[0..n), all of stepper's model: see the comment in jobs.c. Returns the first job's
   failure (each job's own is in its g.st). On a KV pool, the blocks this call needs are found first: sessions
   without a job in the call give theirs back first (least recently started first), then the newest jobs are
   evicted (preempted) while an older one needs room; an evicted job is recomputed (bit for bit: llm_session_evict)
   once the older ones have room, oldest first. A job that waits produces nothing this call; the oldest job never
   waits for a newer one, and fails (WGLLM_ERR_KV_FULL) only when the pool cannot hold it alone. */
wgllm_status llm_jobs_step(llm_job_stepper *stepper, llm_job *const *jobs, size_t n);
/* The generated text, handed to the caller (free() it); the job keeps none. */
char *llm_job_take_text(llm_job *j);
/* Frees what the job holds (a job not done is stopped first); j itself belongs to the caller. */
void llm_job_release(llm_job *j);

/* Collects the batched step in flight: its jobs accept the token they hold, then take the step's (a job whose
   session is `drop`, or that ended, drops it). Anything that feeds, rewinds or frees a session of a job in flight
   (j->flying, s->batch_queued) settles first. */
void llm_job_stepper_settle(llm_job_stepper *stepper, const llm_session *drop);
/* Settles (dropping s's token) and drops the batched step's recording if it uses s (call before freeing s). */
void llm_job_stepper_forget(llm_job_stepper *stepper, const llm_session *s);
void llm_job_stepper_free(llm_job_stepper *stepper); /* what it holds; the struct is the caller's */
#endif
