// The text of DICOM values as GDCM's StringFilter gives it: padding trimmed, multi-valued numbers split on '\'.
#pragma once

#include <string>
#include <vector>

namespace rtf::dicom {

// Without the leading and trailing spaces and NULs that pad DICOM values.
std::string trimmed(std::string s);

// Backslash-separated numbers ("1\0\0\0\0.98\-0.16"); empty where one of them is not a number.
std::vector<double> numbers(const std::string& text);

}  // namespace rtf::dicom
