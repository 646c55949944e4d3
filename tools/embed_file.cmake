# A file as a C array (the chat page `wgllm serve` answers at /, web/chat/index.html): cmake -DIN=FILE -DOUT=FILE.c
# -DNAME=SYMBOL -P tools/embed_file.cmake writes `const unsigned char SYMBOL[]` (NUL-terminated) and SYMBOL_len.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN} by tools/embed_file.cmake */\n#include <stddef.h>\n"
  "const unsigned char ${NAME}[] = {${bytes}0};\nconst size_t ${NAME}_len = ${len};\n")
