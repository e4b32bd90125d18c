#ifndef BEACOND_CMOSQUITTO_SHIM_H
#define BEACOND_CMOSQUITTO_SHIM_H
/* libmosquitto, the Eclipse Mosquitto client library: beacond's MQTT publisher and `beacond venue`
   use it as it is; nothing of MQTT is implemented here. mqtt_protocol.h names MQTT 5's properties
   (`beacond venue` asks for a Maximum Packet Size). */
#include <mosquitto.h>
#include <mqtt_protocol.h>
#endif
