# Runs every tutorial chapter (BIN/NAME for NAME in NAMES) and writes its output to
# OUT/NAME.txt, atomically (a temporary file renamed into place). A chapter that fails stops
# the run with its output, and leaves the previous file in place.
# Used by the target tutorial_outputs (tutorials/CMakeLists.txt).
file(MAKE_DIRECTORY ${OUT})
foreach(name IN LISTS NAMES)
  execute_process(COMMAND ${BIN}/${name} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${name} failed (${status}):\n${out}\n${err}")
  endif()
  file(WRITE ${OUT}/${name}.txt.tmp "${out}")
  file(RENAME ${OUT}/${name}.txt.tmp ${OUT}/${name}.txt)
  message(STATUS "tutorials/saidas/${name}.txt")
endforeach()
