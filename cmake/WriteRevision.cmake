# SPDX-License-Identifier: Apache-2.0
# cmake -DSOURCE_DIR=... -DOUT=... -P WriteRevision.cmake: writes OUT with the source tree's git
# revision for neutracer_build_info, rewriting it only when the revision changed, so a build after
# a commit recompiles the one file that shows it. "unknown" outside a git checkout (a tarball).
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR revision STREQUAL "")
  set(revision "unknown")
endif()
set(content "#pragma once\n// Generated at build time by cmake/WriteRevision.cmake.\nnamespace neutracer {\ninline constexpr const char *kRevision = \"${revision}\";\n} // namespace neutracer\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()
