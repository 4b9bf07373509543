# pybind11's headers at one path per build directory.
#
# pip builds in a new isolated environment each time, so pybind11's include
# directory is a new temporary path on every `pip install`. That path is on
# every compile command line: Ninja then sees a changed command (and header
# dependencies that no longer exist) and recompiles every translation unit,
# even when nothing changed. Compiling against a copy at
# <build-dir>/pybind11-include, written only where a header's content differs,
# keeps the command lines and the headers' timestamps of the previous build,
# so an unchanged tree links nothing and compiles nothing.
function(bloomkit_use_stable_pybind11_headers)
  set(source "${pybind11_INCLUDE_DIR}")
  set(copy "${CMAKE_BINARY_DIR}/pybind11-include")
  if(NOT IS_DIRECTORY "${source}/pybind11")
    message(FATAL_ERROR "pybind11 headers not found in '${source}'")
  endif()
  get_filename_component(source "${source}" REALPATH)

  file(GLOB_RECURSE headers RELATIVE "${source}" "${source}/*")
  file(GLOB_RECURSE copied RELATIVE "${copy}" "${copy}/*")
  # A header a newer pybind11 dropped must not stay visible in the copy.
  foreach(header IN LISTS copied)
    if(NOT header IN_LIST headers)
      file(REMOVE "${copy}/${header}")
    endif()
  endforeach()
  foreach(header IN LISTS headers)
    # copy_if_different leaves an identical file (and its timestamp) alone.
    get_filename_component(directory "${copy}/${header}" DIRECTORY)
    file(MAKE_DIRECTORY "${directory}")
    execute_process(COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${source}/${header}" "${copy}/${header}"
                    RESULT_VARIABLE failed)
    if(failed)
      message(FATAL_ERROR "could not copy pybind11 header '${header}' to '${copy}'")
    endif()
  endforeach()

  # Every pybind11 target that names the original directory names the copy instead.
  foreach(target IN ITEMS pybind11::pybind11_headers pybind11::headers)
    if(TARGET ${target})
      get_target_property(directories ${target} INTERFACE_INCLUDE_DIRECTORIES)
      if(directories)
        string(REPLACE "${pybind11_INCLUDE_DIR}" "${copy}" directories "${directories}")
        string(REPLACE "${source}" "${copy}" directories "${directories}")
        set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${directories}")
      endif()
    endif()
  endforeach()
endfunction()
