/// The `PhotoLedger` module.
enum PhotoLedgerModule {}
