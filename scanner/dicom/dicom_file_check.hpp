// Whether a file is a whole DICOM file, before GDCM sees it (issue 18). Debian's GDCM aborts the process on an
// assertion for a file cut short (gdcmFileMetaInformation.cxx "is.good()"), and a folder watcher meets such files
// whenever a console is still writing: so every file is first walked here, element by element, without decoding any
// value — the preamble and DICM marker, the file meta group (its TransferSyntaxUID says how the rest is encoded),
// then each element's tag, VR and length, sequences and items of undefined length down to their delimiters, and
// encapsulated pixel data down to its last fragment — checking only that every length stays within the file. A file
// is complete when the walk ends exactly at the end of the file after the pixel data.
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
    kMalformed,  // a structure no writer produces (delimiters out of place, nesting deeper than 64)
  };
  Status status = Status::kComplete;
  std::string reason;           // for every status but kComplete (without the file's name)
  std::string transfer_syntax;  // the file meta group's TransferSyntaxUID, where the walk got that far
  bool complete() const { return status == Status::kComplete; }
};

// Reads the whole file. A deflated transfer syntax cannot be walked without inflating: reported complete.
DicomFileCheck check_dicom_file(const std::filesystem::path& path);

}  // namespace rtf::dicom
