#ifndef BEACOND_CBLUEZ_DBUS_SHIM_H
#define BEACOND_CBLUEZ_DBUS_SHIM_H

/* libdbus: the connection, messages and the iterator API. */
#include <dbus/dbus.h>

#endif
