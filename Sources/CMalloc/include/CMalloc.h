/* glibc malloc tuning, which the Glibc Swift module does not export (malloc.h). */
#ifndef CMALLOC_H
#define CMALLOC_H

/* Fixes glibc's mmap threshold at `bytes` (disabling its dynamic raise), so large blocks
   such as Argon2id's 19 MiB working memory are mmapped and returned to the OS when freed.
   Returns 1 on success (mallopt's convention). */
int cmalloc_set_mmap_threshold(int bytes);

#endif
