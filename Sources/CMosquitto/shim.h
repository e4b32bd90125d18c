#ifndef BEACOND_CMOSQUITTO_SHIM_H
#define BEACOND_CMOSQUITTO_SHIM_H
/* libmosquitto, the Eclipse Mosquitto client library: beacond's MQTT publisher and `beacond venue`
   use it as it is; nothing of MQTT is implemented here. */
#include <mosquitto.h>
#endif
