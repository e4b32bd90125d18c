#ifndef BEACOND_CBLUEZ_DBUS_SHIM_H
#define BEACOND_CBLUEZ_DBUS_SHIM_H

/* libdbus: the connection, messages and the iterator API. */
#include <dbus/dbus.h>

/* libdbus takes and returns basic values by address: for strings, object paths and signatures
 * that is the address of a `const char *`, which Swift cannot spell cleanly. These wrap it. */

/* Appends a string-like basic value (DBUS_TYPE_STRING, _OBJECT_PATH or _SIGNATURE). */
static inline dbus_bool_t beacond_dbus_append_string(DBusMessageIter *iter, int type, const char *value) {
    return dbus_message_iter_append_basic(iter, type, &value);
}

/* The string-like basic value at `iter`; it lives as long as the message. */
static inline const char *beacond_dbus_get_string(DBusMessageIter *iter) {
    const char *value = NULL;
    dbus_message_iter_get_basic(iter, &value);
    return value;
}

/* Appends `count` bytes to an open `ay` container in one call. */
static inline dbus_bool_t beacond_dbus_append_bytes(DBusMessageIter *array, const unsigned char *bytes, int count) {
    return dbus_message_iter_append_fixed_array(array, DBUS_TYPE_BYTE, &bytes, count);
}

/* The bytes of an `ay` array; `array` is the iterator recursed into the array. They live as
 * long as the message. */
static inline const unsigned char *beacond_dbus_get_bytes(DBusMessageIter *array, int *count) {
    const unsigned char *bytes = NULL;
    *count = 0;
    dbus_message_iter_get_fixed_array(array, &bytes, count);
    return bytes;
}

#endif
