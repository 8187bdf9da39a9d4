import Foundation
import FuzzSupport
import LedgerCore
import SyncProtocol

/// The JSON bodies of the sync protocol through `JSONReader`: every input is read as each
/// message the server reads from clients (`ReceivedPush`, `PushRequest`, `MissingBlobsRequest`,
/// `KeyChangesRequest`, `SnapshotOffer`) and the clients read from the server (the key store's
/// entries and answers, the offset of an unfinished upload, snapshot records among them), and as
/// a plain `JSONValue`. A message that decodes must
/// encode to JSON that decodes to the same message (and a key store message to its binary form,
/// `KeyStoreBody`, that decodes to the same); a value must serialize to a fixed point.
///
/// Input that is not JSON is given to one message's reader only (chosen by its length), as
/// every reader refuses it the same way after reading as far as it goes.
@main
enum JSONTarget: FuzzTarget {
    static func seeds() -> [Seed] {
        let events = SampleEvents.all.enumerated().map { index, event in
            WireEvent(event, serverSequence: Int64(index + 1), chainHash: [UInt8](repeating: UInt8(index), count: 32))
        }
        let id = SampleEvents.identifier(9)
        let hash = String(repeating: "ab", count: 32)
        var invalid = String(decoding: PushRequest(device: "anna-phone", events: [SampleEvents.all[1]]).encoded(), as: UTF8.self)
        invalid = invalid.replacingOccurrences(of: "\"asset.", with: "\"asset .")
        let messages: [(String, any WireMessage)] = [
            ("push", PushRequest(device: "anna-phone", events: SampleEvents.all)),
            ("pull", PullResponse(events: events, nextCursor: 4, hasMore: true)),
            ("pull-empty", PullResponse(events: [], nextCursor: 0, hasMore: false)),
            (
                "push-response",
                PushResponse(
                    results: [
                        PushResult(id: id, status: .stored(serverSequence: 12)), PushResult(id: id, status: .duplicate(serverSequence: 5)),
                        PushResult(id: id, status: .rejected(reason: "the type \"x\"\tis unknown\u{1}")),
                        PushResult(id: id, status: .gap(expectedDeviceSequence: 7)),
                    ], lastDeviceSequence: 9)
            ),
            (
                "push-response-keys",
                PushResponse(
                    results: [PushResult(id: id, status: .stored(serverSequence: 12))], lastDeviceSequence: 9,
                    head: ServerChainHead(serverSequence: 12, chainHash: [UInt8](repeating: 0x3C, count: 32)),
                    keys: PushedKeyChanges(
                        refused: [
                            .init(index: 2, result: .init(name: "ring/ben", status: .forbidden, reason: "only a readWrite device")),
                            .init(index: 4, result: .init(name: "asset/0193a5b2-7c00-7000-8000-000000000006", status: .conflict)),
                        ], from: 40, through: 43))
            ),
            (
                "library",
                LibraryInfo(
                    library: "family", libraryID: SampleEvents.library, device: "anna-phone", scope: .readWrite, lastServerSequence: 1042)
            ),
            ("chain", ChainSummary(count: 3, headHash: [UInt8](repeating: 0x4B, count: 32), lastServerSequence: 3)),
            ("verify-intact", ChainVerification.intact(count: 12)),
            ("verify-broken", ChainVerification.broken(serverSequence: 5, eventID: id)),
            ("watermark", CompactionWatermark(watermark: 120, lastServerSequence: 135, deviceCount: 3)),
            ("health", HealthResponse(version: "1.2.3")),
            ("error", ErrorResponse(code: .clockSkew, message: "ahead by 10 min — « fix the clock »", serverTime: 1_764_483_790_000)),
            ("error-plain", ErrorResponse(code: .badRequest, message: "field 'events[0].id': not a valid UUID")),
            ("missing-request", MissingBlobsRequest(hashes: [hash, String(repeating: "0", count: 64)])),
            ("missing-response", MissingBlobsResponse(missing: [hash])),
            ("upload-status", UploadStatus(offset: 65536)),
            ("upload-stored", UploadStatus(offset: 0, stored: true)),
            (
                "key-entries",
                KeyEntriesResponse(
                    entries: [
                        KeyEntry(name: "library/public", value: [1, 2, 3]),
                        KeyEntry(name: "asset/\(id.uuidString.lowercased())", value: []),
                    ],
                    last: 42)
            ),
            (
                "key-changes",
                KeyChangesRequest(changes: [
                    KeyChange(name: "writer/anna-phone", value: [9], createOnly: true), KeyChange(name: "grant/anna-phone", value: nil),
                ])
            ),
            (
                "key-results",
                KeyChangesResponse(
                    results: [
                        .init(name: "ring/anna-phone", status: .stored), .init(name: "device/ben", status: .forbidden, reason: "not yours"),
                        .init(name: "asset/x", status: .conflict), .init(name: "grant/cleo", status: .deleted),
                    ], from: 41, through: 43)
            ),
            ("key-results-plain", KeyChangesResponse(results: [])),
            (
                "snapshot-offer",
                SnapshotOffer(position: 120, chainHash: [UInt8](repeating: 0x4B, count: 32), hash: [UInt8](repeating: 0xAB, count: 32))
            ),
            (
                "snapshot-record",
                SnapshotRecord(
                    position: 120, chainHash: [UInt8](repeating: 0x4B, count: 32), hash: [UInt8](repeating: 0xAB, count: 32), size: 4096,
                    device: "anna-phone", recordedAt: 1_764_483_790_000)
            ),
        ]
        return messages.map { Seed(name: "\($0.0).json", bytes: $0.1.encoded()) } + [
            Seed(name: "push-invalid-type.json", bytes: Array(invalid.utf8)),
            Seed(
                name: "value.json",
                bytes: Array(#"{"a":[1,-2.5e-3,true,false,null,"\u00e9\ud83d\ude00\n"],"b":{"c":{}},"d":9007199254740993,"e":-0.0}"#.utf8),
                refused: true),
        ]
    }

    /// Whether some message of the protocol decodes `input`.
    static func accepts(_ input: [UInt8]) -> Bool {
        let messages: [any WireMessage.Type] = [ReceivedPush.self] + readers.map(\.message)
        return messages.contains { (try? $0.decode(input)) != nil }
    }

    /// Each message but `ReceivedPush`, with what `run` checks of it.
    static let readers: [(message: any WireMessage.Type, check: @Sendable ([UInt8]) -> Void)] = [
        (PushRequest.self, roundTrip(PushRequest.self)), (PullResponse.self, roundTrip(PullResponse.self)),
        (PushResponse.self, roundTrip(PushResponse.self)), (LibraryInfo.self, roundTrip(LibraryInfo.self)),
        (ChainSummary.self, roundTrip(ChainSummary.self)), (ChainVerification.self, roundTrip(ChainVerification.self)),
        (CompactionWatermark.self, roundTrip(CompactionWatermark.self)), (HealthResponse.self, roundTrip(HealthResponse.self)),
        (ErrorResponse.self, roundTrip(ErrorResponse.self)), (MissingBlobsRequest.self, roundTrip(MissingBlobsRequest.self)),
        (MissingBlobsResponse.self, roundTrip(MissingBlobsResponse.self)), (UploadStatus.self, roundTrip(UploadStatus.self)),
        (KeyEntriesResponse.self, keyStoreRoundTrip({ KeyStoreBody.encode($0) }, { try KeyStoreBody.decodeEntries($0) })),
        (KeyChangesRequest.self, keyStoreRoundTrip({ KeyStoreBody.encode($0) }, { try KeyStoreBody.decodeChanges($0) })),
        (
            KeyChangesResponse.self,
            keyStoreRoundTrip({ KeyStoreBody.encode($0) }, { try KeyStoreBody.decodeResults($0) }) { response in
                // The binary form carries both positions or neither.
                var expected = response
                if response.from == nil || response.through == nil { (expected.from, expected.through) = (nil, nil) }
                return expected
            }
        ),
        (SnapshotOffer.self, roundTrip(SnapshotOffer.self)),
        (SnapshotRecord.self, roundTrip(SnapshotRecord.self)),
    ]

    static func run(_ input: [UInt8]) {
        guard let value = try? JSONValue.parse(input) else {
            let index = input.count % (readers.count + 1)
            if index < readers.count { readers[index].check(input) } else { _ = try? ReceivedPush.decode(input) }
            return
        }
        let text = value.serialized
        require((try? JSONValue.parse(text))?.serialized == text, "a JSON value does not serialize to a fixed point")
        if let push = try? ReceivedPush.decode(input) {
            // Writing keeps only the valid events.
            let valid = push.events.filter { if case .valid = $0 { true } else { false } }
            require(
                (try? ReceivedPush.decode(push.encoded())) == ReceivedPush(device: push.device, events: valid),
                "ReceivedPush does not read back")
        }
        for reader in readers { reader.check(input) }
    }

    /// Decodes `input` as a key store message, which must read back from its own encoding and,
    /// as `expected` says, from its binary form (`KeyStoreBody`, `encode` and `decode`).
    private static func keyStoreRoundTrip<Message: WireMessage & Equatable>(
        _ encode: @escaping @Sendable (Message) -> [UInt8], _ decode: @escaping @Sendable ([UInt8]) throws -> Message,
        expected: @escaping @Sendable (Message) -> Message = { $0 }
    ) -> @Sendable ([UInt8]) -> Void {
        { input in
            roundTrip(Message.self)(input)
            guard let message = try? Message.decode(input) else { return }
            require(
                (try? decode(encode(message))) == expected(message), "\(Message.self) does not read back from its binary form: \(message)")
        }
    }

    /// Decodes `input` as `Message`; a message decoded must read back from its own encoding.
    private static func roundTrip<Message: WireMessage & Equatable>(_ type: Message.Type) -> @Sendable ([UInt8]) -> Void {
        { input in
            guard let message = try? Message.decode(input) else { return }
            require((try? Message.decode(message.encoded())) == message, "\(Message.self) does not read back: \(message)")
        }
    }
}
