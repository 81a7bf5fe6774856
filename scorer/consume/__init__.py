"""Records in from Kafka: the consumer group, redelivery dedupe and the crash guard."""
