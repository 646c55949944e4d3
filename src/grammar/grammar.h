/* Constrained decoding: grammars compiled once (llama.cpp's GBNF, a JSON schema, any JSON object) and matchers that
   follow a generation token by token and give, before each step, the mask of the tokens that keep the text a prefix
   of a sentence of the grammar. CPU code on src/base and cJSON alone.

   Grammar. GBNF as llama.cpp's grammars/README.md documents it: rules `name ::= alternatives` (names of letters,
   digits and '-'; the sentence is rule "root"), `|`, sequences, string literals and character classes with the
   escapes \n \t \r \\ \" \[ \] \- \^ \/ \xHH \uHHHH \UHHHHHHHH, `[a-z]`, `[^"\\]`, `.` (any character), groups
   `( )`, `*` `+` `?` `{m}` `{m,}` `{m,n}` (counts up to GRAMMAR_MAX_REPEAT; a repetition applies to the item before
   it: a whole string literal), `#` comments; a newline ends a rule except inside a group or after `|` (a line that
   starts with `|` also continues the rule before it). Terminals are Unicode code points; the text is UTF-8 (invalid
   UTF-8, overlong forms and surrogates never match). Refused (WGLLM_ERR_INVALID_ARG, "gbnf LINE:COLUMN: ..."):
   syntax errors (what was expected and what was found), a rule defined twice, an undefined rule, no rule "root"
   (no place to name), groups nested over 1000 deep, a grammar over GRAMMAR_MAX_ELEMENTS once repetitions are
   expanded, and left recursion (a rule that can reach itself before matching a character, such as a repetition of
   something that can match nothing: it would loop forever).

   JSON schema (grammar_schema_to_gbnf): OpenAI's strict structured outputs and what llama.cpp's
   json-schema-to-grammar accepts. type (a name or a list of names; OpenAPI's "nullable": true), properties in the
   schema's order with required ones present and optional ones omissible, additionalProperties (false, true or a
   schema; ABSENT MEANS FALSE WHEN properties ARE DECLARED, any properties when none are: the strict reading, what
   OpenAI requires; other properties come after the declared ones, with keys that differ from theirs and no
   escapes), items, prefixItems (and draft 4's items list with additionalItems), minItems/maxItems, enum, const,
   anyOf, oneOf (only where its alternatives provably cannot both match: different types, different const/enum
   values of a required property, a required property the other does not allow; else refused), allOf (one schema,
   or object schemas merged), $ref to "#" and local JSON pointers (#/$defs/X, #/definitions/X; recursion allowed),
   string minLength/maxLength (code points, up to 10000) and the formats date, time, date-time, uuid, email, ipv4
   and hostname (RFC 3339 and 5321 subsets: every output valid), integer minimum/maximum/exclusiveMinimum/
   exclusiveMaximum (draft 4's boolean forms too) and the formats int32, int64, float and double, number bounds that
   are integers; a schema without type takes the one its keywords imply (properties: object, ...), else any value.
   Annotations are ignored (title, description, examples, default, $schema, $id, $comment, deprecated, readOnly,
   writeOnly, contentEncoding, contentMediaType, discriminator, x-...), and so are keywords JSON Schema does not
   define. Every keyword that constrains the value and is not supported (pattern, patternProperties, propertyNames,
   if/then/else, not, dependentSchemas, dependentRequired, unevaluated*, contains, uniqueItems true, multipleOf,
   minProperties, maxProperties, other formats, fractional number bounds, minLength with a format, keywords beside
   $ref, enum or anyOf, ...) is WGLLM_ERR_UNSUPPORTED naming it and its JSON pointer ("/properties/age/pattern"): a
   constraint is never ignored. A malformed schema (a type that is not a type name, a $ref to nothing, required
   naming an undeclared property, bounds no value fits) is WGLLM_ERR_INVALID_ARG with its pointer. The output is
   compact JSON (no whitespace before the value) plus bounded optional whitespace (a space, or one or two newlines
   and up to 20 spaces or tabs) after each value, key, ':', ',', '{' and '['; keys and enum values as the schema
   writes them (no escapes where none are needed); strings' \u escapes exclude surrogates; numbers have at most 16
   digits before and after the point and a 2-digit exponent (no exponent where bounds apply). Nothing repeats
   without end but strings without maxLength, arrays without maxItems and free-form objects.

   Matching. A matcher holds the set of parse stacks (at most GRAMMAR_MAX_STACKS; more, from an ambiguous grammar,
   puts it in an error state rather than blowing up, as do stacks over 20000 frames deep and rules nested over 1000
   deep without a character) and the bytes of a UTF-8 character a token ended inside. Masks walk the vocabulary's
   byte trie once, pruning what the grammar refuses, through an automaton over the sets of stacks made as it is used
   (taking a subtree whole where every string of its bytes keeps the state alive), and are cached in a grammar_cache
   (per grammar and vocabulary, shared by matchers and threads, bounded, least recently used evicted) under two keys:
   the exact state, and the state cut at the stacks' common context (the tokens decided without looking below it
   kept with the few that are not, which are then checked against the real state: one walk serves a string value in
   any property). Keys fold the links of an x{m,n} deeper than the longest token: a long maxLength costs no more
   walks than a short one. */
#ifndef WGLLM_GRAMMAR_H
#define WGLLM_GRAMMAR_H
#include "llm_err.h"
#include <stddef.h>
#include <stdint.h>

struct cJSON;

#define GRAMMAR_MAX_REPEAT 10000     /* the largest m or n of {m}, {m,}, {m,n} */
#define GRAMMAR_MAX_ELEMENTS 4000000 /* compiled size (characters and rule references), repetitions expanded */
#define GRAMMAR_MAX_STACKS 4096      /* parse stacks a matcher follows at once */
#define GRAMMAR_MAX_ROLLBACK 32      /* accepts grammar_matcher_rollback can undo */

/* A compiled grammar: immutable after creation, shareable across matchers and threads. */
typedef struct grammar grammar;

/* GBNF text (len bytes, UTF-8) -> grammar, rule "root" the sentence. WGLLM_ERR_INVALID_ARG with "gbnf L:C: ..."
   for a malformed text. */
wgllm_status grammar_from_gbnf(const char *text, size_t len, grammar **out, llm_err *err);
/* A JSON schema (an object, or true) -> the GBNF text of the JSON values it accepts (malloc'd, NUL-terminated;
   rule root), as described above; the text is compiled before it is returned, so a schema that would have to contain
   itself ({"$ref": "#"}) is refused with the grammar's left-recursion message. */
wgllm_status grammar_schema_to_gbnf(const struct cJSON *schema, char **gbnf_out, llm_err *err);
wgllm_status grammar_from_json_schema(const struct cJSON *schema, grammar **out, llm_err *err);
/* Any JSON object (OpenAI's response_format json_object). */
wgllm_status grammar_json_object(grammar **out, llm_err *err);
void grammar_free(grammar *g); /* NULL is a no-op */
uint32_t grammar_n_rules(const grammar *g);

/* Token kinds of the vocabulary as the grammar sees it. */
enum {
  GRAMMAR_TOK_TEXT = 0,  /* its bytes are text */
  GRAMMAR_TOK_EOG = 1,   /* end of generation: allowed exactly where the sentence may end */
  GRAMMAR_TOK_NEVER = 2, /* other special and control tokens: never allowed (so is a text token of no bytes) */
};
/* The vocabulary: token id's bytes as they appear in the middle of a text (bytes[id], lens[id] long) and its kind
   (kinds NULL: all text). The bytes are copied; a byte trie over them is built. Built once per tokenizer;
   immutable, shareable. NULL on failure (out of memory, n of 0 or over 2^30), err says why. */
typedef struct grammar_vocab grammar_vocab;
grammar_vocab *grammar_vocab_create(uint32_t n, const char *const *bytes, const uint32_t *lens, const uint8_t *kinds,
                                    llm_err *err);
void grammar_vocab_free(grammar_vocab *v);
uint32_t grammar_vocab_size(const grammar_vocab *v);

/* The masks of one grammar over one vocabulary, shared by any number of matchers on any threads (a mutex guards
   it). max_bytes bounds its memory (0: 64 MiB); the least recently used masks go first. Outlives its matchers; the
   grammar and the vocabulary outlive it. */
typedef struct grammar_cache grammar_cache;
grammar_cache *grammar_cache_create(const grammar *g, const grammar_vocab *v, size_t max_bytes, llm_err *err);
void grammar_cache_free(grammar_cache *c);
typedef struct grammar_cache_stats {
  uint64_t exact_hits, cut_hits, walks; /* masks from the exact state, from the cut state (+ its few checks), walked */
  size_t bytes, entries;
} grammar_cache_stats;
grammar_cache_stats grammar_cache_get_stats(grammar_cache *c);

/* A matcher: the state of one generation. One thread at a time. */
typedef struct grammar_matcher grammar_matcher;
/* over a cache of its own (masks shared by nobody) */
grammar_matcher *grammar_matcher_create(const grammar *g, const grammar_vocab *v, llm_err *err);
/* over a shared cache */
grammar_matcher *grammar_matcher_create_shared(grammar_cache *c, llm_err *err);
/* the same state in a new matcher (over m's shared cache, or a new cache of its own when m has one; the rollback
   history is not copied) */
grammar_matcher *grammar_matcher_clone(const grammar_matcher *m, llm_err *err);
void grammar_matcher_free(grammar_matcher *m);  /* NULL is a no-op */
void grammar_matcher_reset(grammar_matcher *m); /* back to the start of the sentence, the error state cleared */

/* 1 when token id is allowed in the current state (the state advances; an EOG token ends the matcher: nothing is
   allowed after it), 0 when not (the state unchanged, or the error state entered: grammar_matcher_error). */
int grammar_matcher_accept(grammar_matcher *m, int32_t id);
/* the same for text bytes (tests, forced text): all n bytes or none */
int grammar_matcher_accept_bytes(grammar_matcher *m, const char *s, size_t n);
/* undoes the last n accepts (n <= GRAMMAR_MAX_ROLLBACK and no more than were made since the create or reset);
   1 on success, 0 (nothing undone) otherwise */
int grammar_matcher_rollback(grammar_matcher *m, uint32_t n);
/* the text so far is a complete sentence of the grammar (no partial UTF-8 character pending) */
int grammar_matcher_can_end(const grammar_matcher *m);
/* complete and nothing may follow (only EOG tokens are allowed) */
int grammar_matcher_must_end(const grammar_matcher *m);
/* The fewest bytes that complete the sentence from here (0 where it may end now; UINT32_MAX after the end, in the
   error state, or where no text completes it): a generation near its token limit draws only tokens that lower it,
   so the text closes in time (each token lowers it by one byte at least, where single-byte tokens exist). */
uint32_t grammar_matcher_min_bytes(const grammar_matcher *m);
/* an EOG token was accepted */
int grammar_matcher_ended(const grammar_matcher *m);
/* mask: ceil(n_vocab / 32) u32 words, bit (id & 31) of word id >> 5 set where token id is allowed now. Returns the
   number of allowed tokens (0 after the end or in the error state). */
uint32_t grammar_matcher_mask(grammar_matcher *m, uint32_t *mask);
/* As grammar_matcher_mask, keeping only the tokens after which the sentence can still be completed in budget bytes
   (grammar_matcher_min_bytes after the token <= budget; EOG tokens where the sentence may end): one walk of the
   vocabulary's trie from the exact state (each state met keeps its fewest bytes left), never an accept a token, so
   a generation near its token limit narrows a 128K-token mask in milliseconds. Not cached (the budget changes each
   step). */
uint32_t grammar_matcher_mask_within(grammar_matcher *m, uint32_t *mask, uint32_t budget);
/* the error state's record (status WGLLM_OK when none): too many stacks, out of memory */
const llm_err *grammar_matcher_error(const grammar_matcher *m);
#endif
