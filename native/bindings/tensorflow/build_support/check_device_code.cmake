# After each link of a CUDA build's op library (cmake -DCUOBJDUMP=... -DLIBRARY=... -P this file): the library
# whose manifest says device_code: true must hold device code (an ELF per architecture in its fatbin) and the
# core's kernels that the DEVICE_GPU compress/decompress kernels launch. Prints the list; fails without it.
execute_process(COMMAND ${CUOBJDUMP} --list-elf ${LIBRARY} OUTPUT_VARIABLE _elf ERROR_VARIABLE _elf_err
                RESULT_VARIABLE _elf_rc)
if(NOT _elf_rc EQUAL 0 OR NOT _elf MATCHES "ELF file")
  message(FATAL_ERROR "${LIBRARY}: no device code (cuobjdump --list-elf: ${_elf}${_elf_err}), though the DEVICE_GPU "
                      "kernels were compiled in: the core's CUDA kernels were not linked")
endif()
execute_process(COMMAND ${CUOBJDUMP} --dump-elf-symbols ${LIBRARY} OUTPUT_VARIABLE _symbols RESULT_VARIABLE _sym_rc)
if(NOT _symbols MATCHES "compress")
  message(FATAL_ERROR "${LIBRARY}: the fatbin holds no compress kernel (cuobjdump --dump-elf-symbols)")
endif()
string(STRIP "${_elf}" _elf)
message(STATUS "device code in ${LIBRARY}:\n${_elf}")
