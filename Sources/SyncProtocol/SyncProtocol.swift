/// The `SyncProtocol` module.
enum SyncProtocolModule {}
