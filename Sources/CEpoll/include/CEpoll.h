/*
 * CEpoll — a tiny C shim over the Linux calls Glibc's Swift module does not export
 * cleanly: epoll, eventfd, accept4, SO_REUSEPORT, MSG_NOSIGNAL, SHUT_WR.
 *
 * Every function returns what the underlying call returns (-1 with errno set on
 * failure); the Swift side (SuplashHTTP/Syscalls.swift) retries EINTR and maps errors.
 * epoll events are passed as a non-packed struct so Swift imports the layout safely.
 */
#ifndef CEPOLL_H
#define CEPOLL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* epoll event flags and control operations */
extern const uint32_t CEPOLL_IN;
extern const uint32_t CEPOLL_OUT;
extern const uint32_t CEPOLL_ERR;
extern const uint32_t CEPOLL_HUP;
extern const uint32_t CEPOLL_RDHUP;
extern const int CEPOLL_CTL_ADD;
extern const int CEPOLL_CTL_MOD;
extern const int CEPOLL_CTL_DEL;

/* socket constants */
extern const int CEPOLL_SO_REUSEPORT;
extern const int CEPOLL_MSG_NOSIGNAL;
extern const int CEPOLL_SHUT_WR;

/* which call failed in cepoll_tcp_listener */
extern const int CEPOLL_FAILED_GETADDRINFO;
extern const int CEPOLL_FAILED_SOCKET;
extern const int CEPOLL_FAILED_SETSOCKOPT;
extern const int CEPOLL_FAILED_BIND;
extern const int CEPOLL_FAILED_LISTEN;
extern const int CEPOLL_FAILED_GETSOCKNAME;

/* One ready event: the flags and the 64-bit token given to cepoll_ctl. */
typedef struct cepoll_event {
    uint32_t events;
    uint64_t data;
} cepoll_event;

/* epoll_create1(EPOLL_CLOEXEC) */
int cepoll_create(void);
/* epoll_ctl with the event flags and the token in data.u64 */
int cepoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
/* epoll_wait; at most 1024 events per call */
int cepoll_wait(int epfd, cepoll_event *events, int max_events, int timeout_ms);

/* eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) */
int cepoll_eventfd(void);
/* adds 1 to the eventfd counter; returns write's result */
ssize_t cepoll_eventfd_signal(int fd);
/* reads (resets) the eventfd counter; returns read's result */
ssize_t cepoll_eventfd_drain(int fd);

/* accept4(fd, ..., SOCK_NONBLOCK | SOCK_CLOEXEC); writes the peer's IP text
 * (NUL-terminated, inet_ntop) into addr_text (at least 64 bytes); an IPv4-mapped
 * IPv6 peer (dual-stack listener) is written as its IPv4 address. */
int cepoll_accept4(int fd, char *addr_text, size_t addr_text_len);

/* A non-blocking, close-on-exec TCP listening socket with SO_REUSEADDR and
 * SO_REUSEPORT on host:port (numeric host or name; port 0 = any). On success returns
 * the fd and stores the bound port in *bound_port. On failure returns -1, sets errno
 * (or *gai_error for getaddrinfo) and *failed_call to one of CEPOLL_FAILED_*. */
int cepoll_tcp_listener(const char *host, int port, int backlog, int *bound_port,
                        int *failed_call, int *gai_error);

/* TCP_NODELAY on */
int cepoll_set_nodelay(int fd);
/* send(fd, buf, len, MSG_NOSIGNAL) */
ssize_t cepoll_send(int fd, const void *buf, size_t len);
/* sendmsg with two iovecs and MSG_NOSIGNAL (either may be empty) */
ssize_t cepoll_send2(int fd, const void *a, size_t alen, const void *b, size_t blen);
/* shutdown(fd, SHUT_WR) */
int cepoll_shutdown_write(int fd);

#endif
