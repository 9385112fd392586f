# Embeds OpenCL C sources (kernels/*.cl, *.clh) into a generated C++ file at build time.
# rtf_embed_kernels(OUTPUT <cpp> FILES <a.cl> <b.clh> ...) produces a translation unit defining
# rtf::detail::embedded_kernel_sources(): a table of {file name, source text}.
function(rtf_embed_kernels)
  cmake_parse_arguments(ARG "" "OUTPUT" "FILES" ${ARGN})
  add_custom_command(
    OUTPUT ${ARG_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ARG_OUTPUT} "-DFILES=${ARG_FILES}"
            -P ${PROJECT_SOURCE_DIR}/cmake/RtfEmbedKernelsScript.cmake
    DEPENDS ${ARG_FILES} ${PROJECT_SOURCE_DIR}/cmake/RtfEmbedKernelsScript.cmake
    COMMENT "Embedding OpenCL kernel sources"
    VERBATIM)
endfunction()
