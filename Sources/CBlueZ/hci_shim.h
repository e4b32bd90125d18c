#ifndef BEACOND_CBLUEZ_HCI_SHIM_H
#define BEACOND_CBLUEZ_HCI_SHIM_H

/* libbluetooth: raw HCI sockets, the HCI_FILTER sockopt, device ioctls. */
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>

#endif
