#ifndef BEACOND_CBLUEZ_SHIM_H
#define BEACOND_CBLUEZ_SHIM_H

/* The C surface beacond needs from BlueZ and libdbus. Swift owns all logic; these headers
 * expose the libraries' declarations plus small inline helpers for what Swift cannot do
 * cleanly: sockopt structs, ioctls and variadic calls. */
#include "hci_shim.h"
#include "dbus_shim.h"

#endif
