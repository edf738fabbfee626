# What `zinf --version` reports about the build (cmd/version.cpp): the project version, the build
# type and the git commit, as definitions on that one file, so a new commit recompiles nothing
# else. The build reconfigures itself when HEAD moves (a commit, a checkout), so the commit a
# binary names is the one it was built from (bench reports quote it).
find_package(Git QUIET)
set(ZINF_GIT_COMMIT "")
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                  OUTPUT_VARIABLE ZINF_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE zinf_git_result)
  if(NOT zinf_git_result EQUAL 0)
    set(ZINF_GIT_COMMIT "")
  else()
    # HEAD names a branch whose ref file changes on each commit; a detached HEAD changes itself.
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --git-path HEAD
                    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE zinf_head_file
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND ${GIT_EXECUTABLE} symbolic-ref -q HEAD
                    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE zinf_head_ref
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    set(zinf_ref_file "")
    if(zinf_head_ref)
      execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --git-path ${zinf_head_ref}
                      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE zinf_ref_file
                      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    endif()
    foreach(zinf_file IN ITEMS "${zinf_head_file}" "${zinf_ref_file}")
      if(zinf_file)
        get_filename_component(zinf_file "${zinf_file}" ABSOLUTE BASE_DIR ${CMAKE_SOURCE_DIR})
        if(EXISTS "${zinf_file}")
          set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${zinf_file}")
        endif()
      endif()
    endforeach()
  endif()
endif()
set_source_files_properties(${CMAKE_SOURCE_DIR}/cmd/version.cpp PROPERTIES COMPILE_DEFINITIONS
  "ZINF_VERSION=\"${PROJECT_VERSION}\";ZINF_BUILD_TYPE=\"${CMAKE_BUILD_TYPE}\";ZINF_GIT_COMMIT=\"${ZINF_GIT_COMMIT}\"")
