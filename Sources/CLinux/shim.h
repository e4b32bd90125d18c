#ifndef BEACOND_CLINUX_SHIM_H
#define BEACOND_CLINUX_SHIM_H

/* The general Linux calls beacond needs that Swift's Glibc module does not declare (GNU
 * extensions). Bluetooth and D-Bus stay in CBlueZ, whose header includes this one first.
 * Swift owns all logic.
 *
 * The socket header's enums (SOCK_STREAM, MSG_NOSIGNAL...) belong to this module in a compile
 * job that loads it (Glibc's module does not claim the header), so a Swift file of BeacondCore
 * that uses them imports CLinux: otherwise whether it finds them depends on which files share
 * its job. */
#include <errno.h>
#include <malloc.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/filter.h>

/* recvmmsg(2): the HCI reader takes every packet queued in one call (HCIReadBatch). The struct
 * is the kernel's layout of struct mmsghdr; the call goes through syscall(2). Returns the
 * number of packets read, or -1 with errno. */
struct beacond_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};

static inline int beacond_recvmmsg(int fd, struct beacond_mmsghdr *vector, unsigned int count, int flags) {
    return (int)syscall(SYS_recvmmsg, fd, vector, count, flags, (void *)0);
}

/* accept4(2) without the peer's address: the socket server's accept loop (SocketAcceptLoop)
 * takes each connection non-blocking and close-on-exec in one call. */
static inline int beacond_accept4(int fd, int flags) {
    return (int)syscall(SYS_accept4, fd, (void *)0, (void *)0, flags);
}

/* SO_ATTACH_FILTER: a classic BPF program the kernel runs on each packet queued to the socket
 * (HCIReportFilter). The kernel copies and checks the program; `code` need not outlive the call.
 * Returns 0, or -1 with errno. */
static inline int beacond_attach_socket_filter(int fd, const struct sock_filter *code, unsigned short count) {
    struct sock_fprog program = {.len = count, .filter = (struct sock_filter *)code};
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof(program));
}

/* SO_DETACH_FILTER. Returns 0, or -1 with errno (ENOENT: no filter was attached). */
static inline int beacond_detach_socket_filter(int fd) {
    int unused = 0;
    return setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &unused, sizeof(unused));
}

#endif
