# Compiler options for the project's own targets: strict warnings, optional sanitizers.
# tessel_target_options(<target>) applies them; third-party code is never built here.
set(TESSEL_WARNINGS -Wall -Wextra -Werror -Wno-missing-field-initializers)
set(TESSEL_SANITIZER_FLAGS "")
if(TESSEL_SANITIZE)
  set(TESSEL_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
endif()
if(TESSEL_FUZZ)
  # libFuzzer builds (clang only): every project target gets coverage instrumentation and the
  # sanitizers; the fuzz executables add -fsanitize=fuzzer at link time (tests/fuzz/).
  set(TESSEL_SANITIZER_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
      -fno-sanitize-recover=undefined)
endif()

# GCC is the compiler that keeps -Werror (build/, and packagers); clang builds the sanitized tests
# and the fuzz targets, and warns about things GCC does not: shown there, not fatal.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  list(APPEND TESSEL_WARNINGS -Wno-error)
endif()

function(tessel_target_options target)
  target_compile_options(${target} PRIVATE ${TESSEL_WARNINGS} ${TESSEL_SANITIZER_FLAGS})
  target_link_options(${target} PRIVATE ${TESSEL_SANITIZER_FLAGS})
endfunction()

# A test executable: the same warnings, and under the sanitizers AddressSanitizer alone for its
# own sources (which drive the code under test and check it), with both sanitizers' runtimes at
# its link. UndefinedBehaviorSanitizer watches the libraries they link; not instrumenting the test
# files for it takes a third off their compile and half off the sanitized tests' run (the unit
# label's composition half 123 -> 62 CPU-s). AddressSanitizer cannot be left out of them too:
# Abseil's hash tables poison their empty slots when compiled under it, and a template compiled
# both ways in one binary then reports its own writes (use-after-poison).
set(TESSEL_TEST_SANITIZER_FLAGS "")
if(TESSEL_SANITIZE)
  set(TESSEL_TEST_SANITIZER_FLAGS -fsanitize=address -fno-omit-frame-pointer)
endif()
function(tessel_test_options target)
  target_compile_options(${target} PRIVATE ${TESSEL_WARNINGS} ${TESSEL_TEST_SANITIZER_FLAGS})
  target_link_options(${target} PRIVATE ${TESSEL_SANITIZER_FLAGS})
endfunction()
