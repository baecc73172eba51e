# The release a CMake build under native/ is for, made once (native/release/perseus_release.py is the same
# rule for the Python builds): PERSEUS_RELEASE in the environment, else native/release/DEFAULT_RELEASE.
#
#   perseus_default_release(OUT)                       the release, as above
#   perseus_wheel_version(OUT RELEASE FRAMEWORK)       a binding wheel's version: <release>+<framework public version>
#   perseus_binding_release(OUT_RELEASE OUT_WHEEL FRAMEWORK)
#       scikit-build-core's computed version when it builds the wheel, else the default release; both parts
get_filename_component(_PERSEUS_NATIVE_DIR "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)

function(perseus_default_release out)
  if(DEFINED ENV{PERSEUS_RELEASE} AND NOT "$ENV{PERSEUS_RELEASE}" STREQUAL "")
    set(_release "$ENV{PERSEUS_RELEASE}")
  else()
    file(STRINGS "${_PERSEUS_NATIVE_DIR}/release/DEFAULT_RELEASE" _release LIMIT_COUNT 1)
  endif()
  if(NOT _release MATCHES "^[0-9]+(\\.[0-9]+)*$")
    message(FATAL_ERROR "release '${_release}' (PERSEUS_RELEASE or native/release/DEFAULT_RELEASE) is not a release "
                        "version such as 2.0.0")
  endif()
  set(${out} "${_release}" PARENT_SCOPE)
endfunction()

function(perseus_wheel_version out release framework)
  set(${out} "${release}+${framework}" PARENT_SCOPE)
endfunction()

function(perseus_binding_release out_release out_wheel framework)
  if(DEFINED SKBUILD_PROJECT_VERSION_FULL)
    set(_version "${SKBUILD_PROJECT_VERSION_FULL}")
  elseif(DEFINED SKBUILD_PROJECT_VERSION)
    set(_version "${SKBUILD_PROJECT_VERSION}")
  else()
    perseus_default_release(_default)
    perseus_wheel_version(_version "${_default}" "${framework}")
  endif()
  string(REGEX REPLACE "\\+.*$" "" _release "${_version}")
  perseus_wheel_version(_wheel "${_release}" "${framework}")
  set(${out_release} "${_release}" PARENT_SCOPE)
  set(${out_wheel} "${_wheel}" PARENT_SCOPE)
endfunction()
