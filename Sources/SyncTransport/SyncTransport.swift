/// The `SyncTransport` module.
enum SyncTransportModule {}
