"""Real servers tests run on loopback: a Matrix homeserver, a mail server, an MQTT subscriber."""
