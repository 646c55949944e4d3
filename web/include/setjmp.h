/* setjmp/longjmp for the browser build (wasi-libc has none): the Jinja evaluator unwinds its errors with them
   (src/chat/jinja_internal.h). Compiled with -mllvm -wasm-enable-sjlj, clang lowers them onto WebAssembly
   exception handling; web/sjlj.c is the small runtime that lowering calls. */
#ifndef WGLLM_WEB_SETJMP_H
#define WGLLM_WEB_SETJMP_H
typedef struct {
  void *slot[4]; /* the lowering keeps a setjmp id in the first word */
} jmp_buf[1];
int setjmp(jmp_buf env) __attribute__((returns_twice));
_Noreturn void longjmp(jmp_buf env, int val);
#endif
