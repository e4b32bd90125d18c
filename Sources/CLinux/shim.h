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

#endif
