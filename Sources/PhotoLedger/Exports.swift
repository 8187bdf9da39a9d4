// The vocabulary types of the public API (`DeviceID`, `HLCTimestamp`, `Location`, `EventType`,
// …) are defined in LedgerCore; an app that imports PhotoLedger gets them without a second import.
@_exported import LedgerCore
