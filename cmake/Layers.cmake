# SPDX-License-Identifier: Apache-2.0
# neutracer_layer(FOLDER [INTERFACE] [DEPENDS targets...] [EXCLUDE sources...])
#
# Makes the folder's library, neutracer_<FOLDER>: its *.cpp files, linked to DEPENDS (layer
# folder names or any other target). Its headers are reachable as "<FOLDER>/x.h" only through
# an include root that holds this one folder (a link in the build tree), so a file sees the
# headers of its own folder and of the layers it links, and nothing above.
set(NEUTRACER_LAYERS "" CACHE INTERNAL "")
set(NEUTRACER_LAYER_NAMES "" CACHE INTERNAL "")

function(neutracer_layer folder)
  cmake_parse_arguments(LAYER "INTERFACE" "" "DEPENDS;EXCLUDE" ${ARGN})
  set(target neutracer_${folder})
  set(root ${CMAKE_BINARY_DIR}/layers/${folder})
  file(MAKE_DIRECTORY ${root})
  if(NOT EXISTS ${root}/${folder})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${folder} ${root}/${folder} SYMBOLIC)
  endif()

  set(deps "")
  foreach(dep IN LISTS LAYER_DEPENDS)
    if(dep IN_LIST NEUTRACER_LAYER_NAMES)
      list(APPEND deps neutracer_${dep})
    elseif(TARGET ${dep} OR dep MATCHES "^/|^-|^pthread$|^dl$")
      list(APPEND deps ${dep})
    else()
      message(FATAL_ERROR "layer ${folder} depends on '${dep}', which is neither a layer "
                          "declared below it nor a target")
    endif()
  endforeach()

  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${folder}/*.cpp)
  foreach(excluded IN LISTS LAYER_EXCLUDE)
    list(REMOVE_ITEM sources ${CMAKE_SOURCE_DIR}/${excluded})
  endforeach()
  if(LAYER_INTERFACE OR NOT sources)
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${root})
    target_link_libraries(${target} INTERFACE ${deps})
  else()
    add_library(${target} STATIC ${sources})
    target_include_directories(${target} PUBLIC ${root})
    target_link_libraries(${target} PUBLIC ${deps})
    # __FILE__ (the journal's CODE_FILE) relative to the source tree, in the package too.
    target_compile_options(${target} PRIVATE -fmacro-prefix-map=${CMAKE_SOURCE_DIR}/=
                                             -fmacro-prefix-map=${root}/=)
  endif()
  set(NEUTRACER_LAYERS ${NEUTRACER_LAYERS} ${target} CACHE INTERNAL "")
  set(NEUTRACER_LAYER_NAMES ${NEUTRACER_LAYER_NAMES} ${folder} CACHE INTERNAL "")
endfunction()
