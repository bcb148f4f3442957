/* glibc malloc tuning, which the Glibc Swift module does not export (malloc.h). */
#ifndef CMALLOC_H
#define CMALLOC_H

/* Fixes glibc's mmap threshold at `bytes` (disabling its dynamic raise), so large blocks
   such as Argon2id's 19 MiB working memory are mmapped and returned to the OS when freed.
   Returns 1 on success (mallopt's convention). */
int cmalloc_set_mmap_threshold(int bytes);

/* Caps the number of malloc arenas (glibc's default is 8 per core). Each thread that meets
   contention gets its own arena, and freed memory stays in the arena it came from, so many
   worker threads keep many partly empty heaps resident. Returns 1 on success. */
int cmalloc_set_arena_max(int arenas);

#endif
