// What every file of a simulated scanner series shares (issue 18, `rtfmri sim dicom`): the identity a console gives a
// series and the timing of its volumes. The writers (scanner/dicom/dicom_writer.hpp for Siemens mosaics and GE
// single slices, scanner/dicom/enhanced_writer.hpp for enhanced multi-frame) take it with each volume.
#pragma once

#include <string>
#include <vector>

namespace rtf::dicom {

struct DicomWriteSeries {
  std::string study_instance_uid;   // empty: derived from series_instance_uid
  std::string series_instance_uid;  // required: a valid UID (digits and dots, <= 64 characters)
  int series_number = 1;
  std::string patient_name = "rtfmri^sim";
  std::string patient_id = "sim";
  double tr_s = 1.0;
  // Seconds from the volume's start, one per slice in the NIfTI's slice order (k = 0 .. nz-1); empty: not written.
  std::vector<double> slice_timing_s;
};

}  // namespace rtf::dicom
