# Lists what a learner's compiled file calls and defines, for the grader's
# rules (grader.hpp, Forbidden): `nm -C` of its object file, written to OUTPUT,
# then one line "redefines <symbol>" for each function or variable the file
# defines that the libraries it is linked with (LIBRARIES: libqkv, the
# grader) define as their own. Linked from a static library, such a
# definition would replace the library's: the grader's expected values
# would come from the learner's code.
#   cmake -DNM=<nm> -DOBJECTS=<a.o;…> -DLIBRARIES=<a.a;…> -DOUTPUT=<program>.calls -P list_calls.cmake
set(listing "")
foreach(object ${OBJECTS})
  execute_process(COMMAND ${NM} -C ${object} OUTPUT_VARIABLE symbols RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "${NM} -C ${object} failed: the grader cannot check the exercise's rules")
  endif()
  string(APPEND listing "${symbols}")
endforeach()
# The libraries' own definitions: strong ones (T, D, B, R, i), not the weak
# copies of inline functions and templates that every file using a header has.
execute_process(COMMAND ${NM} -C --defined-only --extern-only ${LIBRARIES} OUTPUT_VARIABLE library RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${NM} -C ${LIBRARIES} failed: the grader cannot check the exercise's rules")
endif()
string(REGEX REPLACE "[^\n]* [TDBRi] ([^\n]*)" "own \\1" library "${library}")
string(REPLACE ";" "\\;" lines "${listing}")
string(REPLACE "\n" ";" lines "${lines}")
foreach(line IN LISTS lines)
  if(line MATCHES "^[0-9a-f]+ [TWiDBRV] (.+)$")
    string(FIND "${library}" "own ${CMAKE_MATCH_1}\n" at)
    if(at GREATER_EQUAL 0)
      string(APPEND listing "redefines ${CMAKE_MATCH_1}\n")
    endif()
  endif()
endforeach()
file(WRITE ${OUTPUT} "${listing}")
