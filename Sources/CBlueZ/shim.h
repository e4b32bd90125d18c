#ifndef BEACOND_CBLUEZ_SHIM_H
#define BEACOND_CBLUEZ_SHIM_H

/* The C surface beacond needs from BlueZ and libdbus. Swift owns all logic;
 * this header only exposes the libraries' declarations (and, later, small
 * inline helpers for sockopt structs and variadic calls Swift cannot make). */
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <dbus/dbus.h>

#endif
