# Fuzz harnesses (tests/fuzz/fuzz_<name>.c, each defining LLVMFuzzerTestOneInput), included from tests.cmake.
# Every build makes fuzz_<name>_replay (the harness + replay_main.c, the normal compiler, no fuzzer runtime) and
# the ctest entry fuzz_replay_<name>, which feeds every file of tests/fuzz/corpus/<name>/ and
# tests/fuzz/regressions/<name>/ through the harness. With WGLLM_FUZZ=ON (clang: `make fuzz`) the build also makes
# the libFuzzer programs fuzz_<name> (target `fuzzers`), the harness, wgllm_internal and wgllm_dev instrumented for
# coverage, with ASan and UBSan (any UB report fatal); tests/fuzz/run.sh runs them.
file(GLOB FUZZ_HARNESSES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
list(REMOVE_ITEM FUZZ_HARNESSES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_util.c)
if(WGLLM_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "WGLLM_FUZZ needs clang (libFuzzer): cmake -DCMAKE_C_COMPILER=clang ...")
  endif()
  set(FUZZ_SAN -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_compile_options(wgllm_internal PRIVATE -fsanitize=fuzzer-no-link ${FUZZ_SAN})
  target_compile_options(wgllm_dev PRIVATE -fsanitize=fuzzer-no-link ${FUZZ_SAN})
  add_custom_target(fuzzers)
endif()
foreach(src ${FUZZ_HARNESSES})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^fuzz_" "" short ${name})
  set(progs ${name}_replay)
  add_executable(${name}_replay ${src} ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_util.c
    ${CMAKE_SOURCE_DIR}/tests/fuzz/replay_main.c ${CMAKE_SOURCE_DIR}/tests/fuzz/crafted.c)
  if(WGLLM_FUZZ)
    list(APPEND progs ${name})
    add_executable(${name} ${src} ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_util.c)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer ${FUZZ_SAN})
    target_link_options(${name} PRIVATE -fsanitize=fuzzer ${FUZZ_SAN})
    target_compile_options(${name}_replay PRIVATE ${FUZZ_SAN})
    target_link_options(${name}_replay PRIVATE ${FUZZ_SAN})
    add_dependencies(fuzzers ${name} ${name}_replay)
  endif()
  foreach(p ${progs})
    target_include_directories(${p} PRIVATE ${WGLLM_SRC_DIRS} ${CMAKE_SOURCE_DIR}/tests/fuzz ${CJSON_INCLUDE_DIRS})
    target_compile_definitions(${p} PRIVATE WGLLM_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
    target_link_libraries(${p} PRIVATE wgllm_dev)
    set_target_properties(${p} PROPERTIES BUILD_RPATH "${CMAKE_BINARY_DIR};${DAWN_DIR}/lib")
    if(short STREQUAL "http_request") # the request parser of `wgllm serve`, a CLI source outside the library
      target_sources(${p} PRIVATE ${CMAKE_SOURCE_DIR}/tools/serve/serve_openai.c ${CMAKE_SOURCE_DIR}/tools/serve/serve_embed.c)
      target_include_directories(${p} PRIVATE ${CMAKE_SOURCE_DIR}/tools/serve)
    endif()
  endforeach()
  add_test(NAME fuzz_replay_${short} COMMAND ${name}_replay ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${short}
    ${CMAKE_SOURCE_DIR}/tests/fuzz/regressions/${short} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests)
  set_tests_properties(fuzz_replay_${short} PROPERTIES TIMEOUT 900)
  # the resource bound of issue 13 (each input < 1 MB: 1 s of CPU, 100 MB over the baseline), measured without
  # sanitizers only: on the corpus, the regression inputs and crafted.c's worst cases (replay_main.c --bound)
  if(NOT WGLLM_FUZZ AND NOT WGLLM_ASAN)
    add_test(NAME fuzz_bound_${short} COMMAND ${name}_replay --bound 1000 100 --crafted ${short}
      ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${short} ${CMAKE_SOURCE_DIR}/tests/fuzz/regressions/${short}
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests)
    set_tests_properties(fuzz_bound_${short} PROPERTIES TIMEOUT 900)
  endif()
endforeach()
