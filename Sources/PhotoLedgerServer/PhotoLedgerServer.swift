/// The `PhotoLedgerServer` module.
enum PhotoLedgerServerModule {}
