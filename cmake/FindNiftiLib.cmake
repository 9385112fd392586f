# Finds nifticlib's NIfTI-2 reader (libnifti2, which also reads NIfTI-1) and defines rtf::nifti2.
# Debian 12's NIFTIConfig.cmake points at /usr/lib instead of the multiarch directory, so the
# package config cannot be used; this module searches the normal library paths instead.
find_path(NIFTI_INCLUDE_DIR nifti2_io.h PATH_SUFFIXES nifti)
find_library(NIFTI_NIFTI2_LIBRARY nifti2)
find_library(NIFTI_ZNZ_LIBRARY znz)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NiftiLib REQUIRED_VARS NIFTI_INCLUDE_DIR NIFTI_NIFTI2_LIBRARY NIFTI_ZNZ_LIBRARY)
if(NiftiLib_FOUND AND NOT TARGET rtf::nifti2)
  add_library(rtf::nifti2 UNKNOWN IMPORTED)
  set_target_properties(rtf::nifti2 PROPERTIES IMPORTED_LOCATION ${NIFTI_NIFTI2_LIBRARY}
                                               INTERFACE_INCLUDE_DIRECTORIES ${NIFTI_INCLUDE_DIR}
                                               INTERFACE_LINK_LIBRARIES "${NIFTI_ZNZ_LIBRARY};ZLIB::ZLIB;m")
endif()
