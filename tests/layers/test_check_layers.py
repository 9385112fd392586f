#!/usr/bin/env python3
"""The layering check (scripts/check_layers.py) on small trees: a clean one passes; an upward include, a production
folder including the references, a production target linking them and an include cycle each fail, naming the file and
line; the repository itself passes. The rules are the real ones (docs/architecture.md). ctest: layers.check_layers."""

import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKER = os.path.join(REPO, "scripts", "check_layers.py")
RULES = os.path.join(REPO, "docs", "architecture.md")

# A tree that follows the rules: core with two areas, the references, stream, cli and tests, and their CMake files.
CLEAN = {
    "core/CMakeLists.txt": "add_library(rtf_core STATIC a.cpp)\ntarget_link_libraries(rtf_core PUBLIC Eigen3::Eigen)\n"
    "add_subdirectory(reference)\n",
    "core/image/image.hpp": "#pragma once\n#include <vector>\n",
    "core/glm/glm.hpp": '#pragma once\n#include "core/image/image.hpp"\n',
    "core/glm/glm.cpp": '#include "core/glm/glm.hpp"\n',
    "core/reference/CMakeLists.txt": "add_library(rtf_reference STATIC EXCLUDE_FROM_ALL glm_reference.cpp)\n"
    "target_link_libraries(rtf_reference PUBLIC rtf_core)\n",
    "core/reference/glm_reference.hpp": '#pragma once\n#include "core/glm/glm.hpp"\n',
    "stream/CMakeLists.txt": "add_library(rtf_stream STATIC s.cpp)\ntarget_link_libraries(rtf_stream PUBLIC rtf_core)\n",
    "stream/server/server.hpp": '#pragma once\n#include "core/image/image.hpp"\n',
    "cli/CMakeLists.txt": "add_executable(rtfmri main.cpp)\n"
    "target_link_libraries(rtfmri PRIVATE rtf_core  # the library\n  rtf_stream CLI11::CLI11)\n",
    "cli/main.cpp": '#include "stream/server/server.hpp"\n#include "core/glm/glm.hpp"\n',
    "tests/CMakeLists.txt": "add_executable(glm_test test_glm.cpp)\n"
    "target_link_libraries(glm_test PRIVATE rtf_reference rtf_stream)\n",
    "tests/glm/test_glm.cpp": '#include "core/reference/glm_reference.hpp"\n#include "cli/main.cpp"\n',
    "kernels/glm.cl": '#include "helpers.clh"\n',
    "kernels/helpers.clh": "// helpers\n",
}


def write_tree(root, files):
    for relative, text in files.items():
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def check(root):
    result = subprocess.run([sys.executable, CHECKER, "--root", root, "--rules", RULES], capture_output=True,
                            text=True, check=False)
    return result.returncode, result.stdout + result.stderr


class CheckLayers(unittest.TestCase):
    def run_tree(self, changes):
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, {**CLEAN, **changes})
            return check(root)

    def assert_fails_naming(self, changes, *expected):
        status, output = self.run_tree(changes)
        self.assertEqual(status, 1, output)
        for text in expected:
            self.assertIn(text, output)

    def test_clean_tree_passes(self):
        status, output = self.run_tree({})
        self.assertEqual(status, 0, output)
        self.assertIn("layers: ok", output)

    def test_core_including_stream_fails_naming_file_and_line(self):
        self.assert_fails_naming(
            {"core/glm/glm.cpp": '#include "core/glm/glm.hpp"\n\n#include "stream/server/server.hpp"\n'},
            "core/glm/glm.cpp:3:", "core/ may not include stream/")

    def test_production_including_the_references_fails(self):
        self.assert_fails_naming({"cli/main.cpp": '// main\n#include "core/reference/glm_reference.hpp"\n'},
                                 "cli/main.cpp:2:", "cli/ may not include core/reference/")
        self.assert_fails_naming({"core/glm/glm.cpp": '#  include <core/reference/glm_reference.hpp>\n'},
                                 "core/glm/glm.cpp:1:", "core/ may not include core/reference/")

    def test_production_target_linking_the_references_fails_naming_the_line(self):
        self.assert_fails_naming(
            {"cli/CMakeLists.txt": "add_executable(rtfmri main.cpp)\n"
             "target_link_libraries(rtfmri PRIVATE rtf_core\n  # comment (with parentheses)\n  rtf_reference)\n"},
            "cli/CMakeLists.txt:4:", "links rtf_reference (the references")
        self.assert_fails_naming(
            {"stream/CMakeLists.txt": "add_library(rtf_stream STATIC s.cpp)\n"
             "target_link_libraries(rtf_stream PUBLIC rtf_core $<$<CONFIG:Debug>:rtf_reference>)\n"},
            "stream/CMakeLists.txt:2:")

    def test_lower_target_linking_a_higher_one_fails(self):
        self.assert_fails_naming(
            {"core/CMakeLists.txt": "add_library(rtf_core STATIC a.cpp)\ntarget_link_libraries(rtf_core rtf_stream)\n"},
            "core/CMakeLists.txt:2:", "links rtf_stream")

    def test_include_cycle_between_areas_fails_naming_each_link(self):
        self.assert_fails_naming(
            {"core/image/image.hpp": '#pragma once\n#include <vector>\n#include "core/glm/glm.hpp"\n'},
            "include cycle between core/glm, core/image", "core/image -> core/glm: core/image/image.hpp:3",
            "core/glm -> core/image: core/glm/glm.hpp:2")

    def test_repository_passes(self):
        status, output = check(REPO)
        self.assertEqual(status, 0, output)


if __name__ == "__main__":
    unittest.main(verbosity=2)
