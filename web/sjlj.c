/* The runtime of clang's setjmp/longjmp lowering onto WebAssembly exceptions (-mllvm -wasm-enable-sjlj, LLVM 14):
   each function that calls setjmp keeps a table of its setjmp points (saveSetjmp adds one, testSetjmp finds the
   one a longjmp targets), and longjmp throws the __c_longjmp tag with its target and value, which those functions
   catch. What Emscripten's runtime provides for the same lowering, for wasi-libc, which has none. */
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct table_entry {
  uintptr_t id;
  uint32_t label;
} table_entry;

static uint32_t temp_ret0;
static uintptr_t setjmp_id;

void setTempRet0(uint32_t v) { temp_ret0 = v; }
uint32_t getTempRet0(void) { return temp_ret0; }

/* records the setjmp point `label` of the calling function in its table (size entries, zero-terminated), growing
   the table when full; the new size goes back through TempRet0 */
table_entry *saveSetjmp(uintptr_t *env, uint32_t label, table_entry *table, uint32_t size) {
  setjmp_id++;
  *env = setjmp_id;
  for (uint32_t i = 0; i < size; i++)
    if (table[i].id == 0) {
      table[i].id = setjmp_id;
      table[i].label = label;
      table[i + 1].id = 0;
      setTempRet0(size);
      return table;
    }
  size *= 2;
  table = realloc(table, sizeof(table_entry) * (size + 1));
  if (!table) abort();
  table = saveSetjmp(env, label, table, size);
  setTempRet0(size);
  return table;
}

/* the label of setjmp id in a function's table, 0 when the longjmp is for another function */
uint32_t testSetjmp(uintptr_t id, table_entry *table, uint32_t size) {
  for (uint32_t i = 0; i < size && table[i].id; i++)
    if (table[i].id == id) return table[i].label;
  return 0;
}

static struct {
  void *env;
  int val;
} longjmp_args;

void __wasm_longjmp(void *env, int val) {
  longjmp_args.env = env;
  longjmp_args.val = val ? val : 1;
  __builtin_wasm_throw(1, &longjmp_args); /* tag 1: __c_longjmp */
}

/* a setjmp in this file makes the lowering define the __c_longjmp tag here as well, which the throw above needs */
__attribute__((used)) int wgllm_sjlj_tag_anchor(jmp_buf b) { return setjmp(b); }
