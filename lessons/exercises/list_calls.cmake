# Lists what a learner's compiled file calls, for the grader's rules
# (grader.hpp, Forbidden): `nm -C` of its object file, written to OUTPUT.
#   cmake -DNM=<nm> -DOBJECTS=<a.o;…> -DOUTPUT=<program>.calls -P list_calls.cmake
set(listing "")
foreach(object ${OBJECTS})
  execute_process(COMMAND ${NM} -C ${object} OUTPUT_VARIABLE symbols RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "${NM} -C ${object} failed: the grader cannot check the exercise's rules")
  endif()
  string(APPEND listing "${symbols}")
endforeach()
file(WRITE ${OUTPUT} "${listing}")
