#ifndef BEACOND_CBLUEZ_HCI_SHIM_H
#define BEACOND_CBLUEZ_HCI_SHIM_H

/* libbluetooth: raw HCI sockets, the HCI_FILTER sockopt, device ioctls. */
/* The general Linux declarations first, from their own module (CLinux). */
#include "../CLinux/shim.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>

/* Sets the socket's HCI_FILTER. The masks use the kernel's layout: packet type t is bit t of
 * type_mask; event e is bit (e & 63) of the 64-bit event mask, low word first. No opcode filter.
 * Returns 0, or -1 with errno. */
static inline int beacond_hci_set_filter(int fd, uint32_t type_mask, uint32_t event_mask_low,
                                         uint32_t event_mask_high) {
    struct hci_filter filter;
    hci_filter_clear(&filter);
    filter.type_mask = type_mask;
    filter.event_mask[0] = event_mask_low;
    filter.event_mask[1] = event_mask_high;
    return setsockopt(fd, SOL_HCI, HCI_FILTER, &filter, sizeof(filter));
}

/* Reads the socket's HCI_FILTER back: what the kernel actually installed, which without
 * CAP_NET_RAW is the requested filter ANDed with its security filter. 0, or -1 with errno. */
static inline int beacond_hci_get_filter(int fd, uint32_t *type_mask, uint32_t *event_mask_low,
                                         uint32_t *event_mask_high) {
    struct hci_filter filter;
    socklen_t length = sizeof(filter);
    hci_filter_clear(&filter);
    if (getsockopt(fd, SOL_HCI, HCI_FILTER, &filter, &length) < 0) return -1;
    *type_mask = filter.type_mask;
    *event_mask_low = filter.event_mask[0];
    *event_mask_high = filter.event_mask[1];
    return 0;
}

/* A raw HCI socket bound to no adapter (HCI_DEV_NONE), non-blocking, filtered to the kernel's
 * stack-internal events (0xFD): the kernel sends an adapter's up, down, register and unregister
 * notices only to raw sockets bound to no adapter, never to one bound to that adapter.
 * Returns the descriptor, or -1 with errno. */
static inline int beacond_hci_open_device_events(void) {
    int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, BTPROTO_HCI);
    if (fd < 0) return -1;
    struct sockaddr_hci address = {0};
    address.hci_family = AF_BLUETOOTH;
    address.hci_dev = HCI_DEV_NONE;
    address.hci_channel = HCI_CHANNEL_RAW;
    struct hci_filter filter;
    hci_filter_clear(&filter);
    hci_filter_set_ptype(HCI_EVENT_PKT, &filter);
    hci_filter_set_event(EVT_STACK_INTERNAL, &filter);
    if (bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0 ||
        setsockopt(fd, SOL_HCI, HCI_FILTER, &filter, sizeof(filter)) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* The ids of the adapters the kernel knows (HCIGETDEVLIST), up to `capacity`.
 * Returns how many, or -1 with errno. */
static inline int beacond_hci_device_ids(uint16_t *ids, int capacity) {
    if (capacity <= 0) return 0;
    int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
    if (fd < 0) return -1;
    struct hci_dev_list_req *list =
        calloc(1, sizeof(*list) + (size_t)capacity * sizeof(struct hci_dev_req));
    if (list == NULL) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    list->dev_num = (uint16_t)capacity;
    int result = ioctl(fd, HCIGETDEVLIST, (void *)list);
    int saved = errno;
    close(fd);
    if (result < 0) {
        free(list);
        errno = saved;
        return -1;
    }
    int count = list->dev_num < capacity ? list->dev_num : capacity;
    for (int index = 0; index < count; index++) ids[index] = list->dev_req[index].dev_id;
    free(list);
    return count;
}

#endif
