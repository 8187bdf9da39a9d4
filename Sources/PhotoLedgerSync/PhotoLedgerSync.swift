/// The `PhotoLedgerSync` module.
enum PhotoLedgerSyncModule {}
