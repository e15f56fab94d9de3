// libdew_openmp_passive.so: sets OMP_WAIT_POLICY=PASSIVE, unless the caller chose a policy, from its
// initializer, which the loader runs after libc's and before libgomp's (NOTE [OpenMP's idle threads]).
// Its own library, linked into `dew` after libgomp: only the initializers of shared objects run between
// libc's, which resets the environment to the one the process began with, and libgomp's, which reads it.
#include <cstdlib>

// NOTE [OpenMP's idle threads]: oneDNN's GEMMs run on OpenMP's team, Dew's kernels on its own pool. By
// default OpenMP's workers spin for 300,000 rounds after each GEMM, taking the cores from the kernels
// that follow; sleeping, they leave the cores to them (docs/perf.md, "Training against PyTorch"). libgomp
// reads the policy once, in its initializer. Set from the executable's .preinit_array it was lost (libc's
// initializer, which runs later, restores the process's first environment); set by executing the
// program again it would escape a wrapper such as valgrind or qemu-user. The loader runs the
// initializers of a program's libraries that do not depend on each other in the reverse of their order
// in its needed list (glibc), so this library comes after libgomp there; a CLI test reads libgomp's spin
// count to hold that.
namespace {
[[gnu::constructor]] void wait_passively_in_openmp() {
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
}
}  // namespace

// Called by the dew command, so that no linker drops the library as unused (--as-needed).
extern "C" [[gnu::visibility("default")]] void dew_openmp_passive() {}
