// `rtfmri devices`'s work: every OpenCL platform and device on stdout, the one --device would use marked *, what
// --devices would use, and whether the build has MPI.
#pragma once

#include <string>

namespace rtf {

// `device`: the --device spec ("" : $RTFMRI_DEVICE's or the default); `devices`: the --devices spec ("": not listed).
void run_devices_command(const std::string& device, const std::string& devices);

}  // namespace rtf
