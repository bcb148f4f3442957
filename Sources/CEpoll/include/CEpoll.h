/* Placeholder; replaced by the HTTP engine work. */
#ifndef CEPOLL_H
#define CEPOLL_H
int cepoll_placeholder(void);
#endif
