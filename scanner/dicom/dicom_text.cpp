// Trimming and splitting of DICOM value text.
#include "scanner/dicom/dicom_text.hpp"

#include <sstream>

namespace rtf::dicom {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  size_t start = 0;
  while (start < s.size() && (s[start] == ' ' || s[start] == '\0')) ++start;
  return s.substr(start);
}

std::vector<double> numbers(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, '\\')) {
    item = trimmed(item);
    if (item.empty()) continue;
    try {
      out.push_back(std::stod(item));
    } catch (const std::exception&) {
      return {};
    }
  }
  return out;
}

}  // namespace rtf::dicom
