// Whether a file is a whole DICOM file, before GDCM sees it (issue 18). Debian's GDCM aborts the process on an
// assertion for a file cut short (gdcmFileMetaInformation.cxx "is.good()"), and a folder watcher meets such files
// whenever a console is still writing: so every file is first walked here, element by element, without decoding any
// value — the preamble and DICM marker, the file meta group (its TransferSyntaxUID says how the rest is encoded),
// then each element's tag, VR and length, sequences and items of undefined length down to their delimiters, and
// encapsulated pixel data down to its last fragment — checking only that every length stays within the file (and
// within its item, in sequences of defined length). A file is complete when the walk ends exactly at the end of the
// file after the pixel data. Structures on which that GDCM asserts or allocates gigabytes (an unknown VR, whose length
// it reads differently; pixel data with VR SQ; an element running past its item) are malformed (issue 18's fuzz tests).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace rtf::dicom {

struct DicomFileCheck {
  enum class Status {
    kComplete,   // every element within the file, pixel data present
    kTruncated,  // an element runs past the end, or the file ends before its pixel data: still being written?
    kNotDicom,   // no DICM marker and no group 0008 element at the start
    kMalformed,  // a structure no writer produces (delimiters out of place, nesting deeper than 64, unknown VRs)
  };
  Status status = Status::kComplete;
  std::string reason;               // for every status but kComplete (without the file's name)
  std::string transfer_syntax;      // the file meta group's TransferSyntaxUID, where the walk got that far
  uint64_t bytes_read = 0;          // what the check read of the file (scanner/dicom/file_window.hpp)
  uint64_t native_pixel_bytes = 0;  // the length of native (not encapsulated) pixel data; 0 for encapsulated
  bool complete() const { return status == Status::kComplete; }
};

// Reads only what the walk looks at (tags, VRs, lengths; never a value but the TransferSyntaxUID), through
// scanner/dicom/file_window.hpp: a file that is not DICOM costs its first 512 bytes, whatever its size, and a DICOM
// file its header (the pixel data are skipped over). A deflated transfer syntax cannot be walked without inflating:
// reported complete.
DicomFileCheck check_dicom_file(const std::filesystem::path& path);

}  // namespace rtf::dicom
