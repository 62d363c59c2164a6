// compat/omp.h — stands in for <omp.h> when the compiler has no OpenMP
// (the Makefile adds -Icompat and -DLANTERN_NO_OPENMP only then; this folder
// is never on the include path otherwise, so the real header always wins).
//
// Why this works: every `#pragma omp` in Lantern is a hint. A compiler
// without OpenMP ignores it and runs the loop on one thread. The loops were
// written so that no result depends on the thread count (each thread owns
// whole output rows), so the one-thread program computes the same bits,
// only slower. What remains are the few library calls; on one thread their
// answers are known.
#pragma once

inline int omp_get_num_procs() { return 1; }
inline int omp_get_max_threads() { return 1; }
inline int omp_get_num_threads() { return 1; }
inline int omp_get_thread_num() { return 0; }
inline void omp_set_num_threads(int) {}
