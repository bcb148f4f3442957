#define _GNU_SOURCE
#include "CEpoll.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

const uint32_t CEPOLL_IN = EPOLLIN;
const uint32_t CEPOLL_OUT = EPOLLOUT;
const uint32_t CEPOLL_ERR = EPOLLERR;
const uint32_t CEPOLL_HUP = EPOLLHUP;
const uint32_t CEPOLL_RDHUP = EPOLLRDHUP;
const int CEPOLL_CTL_ADD = EPOLL_CTL_ADD;
const int CEPOLL_CTL_MOD = EPOLL_CTL_MOD;
const int CEPOLL_CTL_DEL = EPOLL_CTL_DEL;

const int CEPOLL_SO_REUSEPORT = SO_REUSEPORT;
const int CEPOLL_MSG_NOSIGNAL = MSG_NOSIGNAL;
const int CEPOLL_SHUT_WR = SHUT_WR;

const int CEPOLL_FAILED_GETADDRINFO = 1;
const int CEPOLL_FAILED_SOCKET = 2;
const int CEPOLL_FAILED_SETSOCKOPT = 3;
const int CEPOLL_FAILED_BIND = 4;
const int CEPOLL_FAILED_LISTEN = 5;
const int CEPOLL_FAILED_GETSOCKNAME = 6;

int cepoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int cepoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

int cepoll_wait(int epfd, cepoll_event *events, int max_events, int timeout_ms) {
    struct epoll_event raw[1024];
    if (max_events > 1024) max_events = 1024;
    if (max_events < 1) max_events = 1;
    int n = epoll_wait(epfd, raw, max_events, timeout_ms);
    for (int i = 0; i < n; i++) {
        events[i].events = raw[i].events;
        events[i].data = raw[i].data.u64;
    }
    return n;
}

int cepoll_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

ssize_t cepoll_eventfd_signal(int fd) {
    uint64_t one = 1;
    return write(fd, &one, sizeof one);
}

ssize_t cepoll_eventfd_drain(int fd) {
    uint64_t value = 0;
    return read(fd, &value, sizeof value);
}

int cepoll_accept4(int fd, char *addr_text, size_t addr_text_len) {
    struct sockaddr_storage addr;
    socklen_t len = sizeof addr;
    int c = accept4(fd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) return c;
    if (addr_text && addr_text_len > 0) {
        addr_text[0] = 0;
        if (addr.ss_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)&addr)->sin_addr, addr_text, (socklen_t)addr_text_len);
        } else if (addr.ss_family == AF_INET6) {
            const struct in6_addr *a6 = &((struct sockaddr_in6 *)&addr)->sin6_addr;
            if (IN6_IS_ADDR_V4MAPPED(a6)) {
                /* An IPv4 client of a dual-stack listener: its IPv4 address (RFC 4291 §2.5.5.2),
                 * so limits and trusted proxies see one spelling per client. */
                inet_ntop(AF_INET, &a6->s6_addr[12], addr_text, (socklen_t)addr_text_len);
            } else {
                inet_ntop(AF_INET6, a6, addr_text, (socklen_t)addr_text_len);
            }
        }
    }
    return c;
}

int cepoll_tcp_listener(const char *host, int port, int backlog, int *bound_port,
                        int *failed_call, int *gai_error) {
    struct addrinfo hints, *res = NULL;
    char service[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0 || res == NULL) {
        *failed_call = CEPOLL_FAILED_GETADDRINFO;
        *gai_error = rc;
        return -1;
    }
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, res->ai_protocol);
    if (fd < 0) { *failed_call = CEPOLL_FAILED_SOCKET; freeaddrinfo(res); return -1; }
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
        int saved = errno; close(fd); freeaddrinfo(res); errno = saved;
        *failed_call = CEPOLL_FAILED_SETSOCKOPT;
        return -1;
    }
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
        int saved = errno; close(fd); freeaddrinfo(res); errno = saved;
        *failed_call = CEPOLL_FAILED_BIND;
        return -1;
    }
    freeaddrinfo(res);
    if (listen(fd, backlog) != 0) {
        int saved = errno; close(fd); errno = saved;
        *failed_call = CEPOLL_FAILED_LISTEN;
        return -1;
    }
    struct sockaddr_storage addr;
    socklen_t len = sizeof addr;
    if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
        int saved = errno; close(fd); errno = saved;
        *failed_call = CEPOLL_FAILED_GETSOCKNAME;
        return -1;
    }
    if (addr.ss_family == AF_INET) *bound_port = ntohs(((struct sockaddr_in *)&addr)->sin_port);
    else if (addr.ss_family == AF_INET6) *bound_port = ntohs(((struct sockaddr_in6 *)&addr)->sin6_port);
    else *bound_port = port;
    return fd;
}

int cepoll_set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

ssize_t cepoll_send(int fd, const void *buf, size_t len) {
    return send(fd, buf, len, MSG_NOSIGNAL);
}

ssize_t cepoll_send2(int fd, const void *a, size_t alen, const void *b, size_t blen) {
    struct iovec iov[2];
    int n = 0;
    if (alen > 0) { iov[n].iov_base = (void *)a; iov[n].iov_len = alen; n++; }
    if (blen > 0) { iov[n].iov_base = (void *)b; iov[n].iov_len = blen; n++; }
    if (n == 0) return 0;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = iov;
    msg.msg_iovlen = (size_t)n;
    return sendmsg(fd, &msg, MSG_NOSIGNAL);
}

int cepoll_shutdown_write(int fd) { return shutdown(fd, SHUT_WR); }
