# Writes OUT, a header defining DEW_COMMIT from `git describe` of SOURCE_DIR ("unknown" outside a git
# checkout), and touches it only when the commit changes, so that a build recompiles only on a change.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT commit)
  set(commit "unknown")
endif()
file(WRITE "${OUT}.new" "#define DEW_COMMIT \"${commit}\"\n")
file(COPY_FILE "${OUT}.new" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.new")
