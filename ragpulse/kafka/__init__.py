"""Kafka settings, connections, producers and topics shared by the collector and the scorer."""
