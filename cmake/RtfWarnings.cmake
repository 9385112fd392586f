# Warning flags shared by every rtfmri target: rtf_set_warnings(<target>).
function(rtf_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wcast-align -Wunused -Woverloaded-virtual)
  if(RTF_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
