# What `zinf --version` reports about the build (cmd/version.cpp): the project version, the build
# type and the git commit at configure time (reconfigure to refresh it), as definitions on that
# one file, so a new commit recompiles nothing else.
find_package(Git QUIET)
set(ZINF_GIT_COMMIT "")
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                  OUTPUT_VARIABLE ZINF_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE zinf_git_result)
  if(NOT zinf_git_result EQUAL 0)
    set(ZINF_GIT_COMMIT "")
  endif()
endif()
set_source_files_properties(${CMAKE_SOURCE_DIR}/cmd/version.cpp PROPERTIES COMPILE_DEFINITIONS
  "ZINF_VERSION=\"${PROJECT_VERSION}\";ZINF_BUILD_TYPE=\"${CMAKE_BUILD_TYPE}\";ZINF_GIT_COMMIT=\"${ZINF_GIT_COMMIT}\"")
