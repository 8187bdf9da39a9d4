import CommandLineParsing
import Foundation
import PhotoLedger
import PhotoLedgerJSON
import PhotoLedgerSync

/// `photoledger device …`: the devices of an end-to-end encrypted library.
struct Device: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device", abstract: "Enrol, approve, list and revoke the devices of an encrypted library.",
        discussion: """
            A new device joins an encrypted library in three steps: on the new device, 'device enroll'
            publishes its public key and shows a code; on an enrolled device, 'device approve NAME'
            shows the code for NAME's key: when both codes are the same, run it again with
            --code to seal the library's keys for the new device; then 'sync' on the new device.
            """,
        subcommands: [Enroll.self, Approve.self, List.self, Revoke.self, Restore.self])

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

    /// `device enroll`.
    struct Enroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enroll", abstract: "Ask to join the encrypted library: publish this device's key and show its code.")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

        func run() async throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let engine = try SyncEngine(library: library)
            let report = try await engine.sync()
            switch library.encryptionStatus {
            case .enrolled:
                context.emitOrSay(["enrolled": .bool(true)], "This device is enrolled: it reads the library.")
            case .addOnly:
                context.emitOrSay(
                    ["enrolled": .bool(true), "addOnly": .bool(true)],
                    "This add-only device is approved: it seals the assets it adds for the library's readers, and reads nothing.")
            case .awaitingEnrolment(let code):
                guard let code else {
                    throw CommandFailure(
                        "the server's library has published no identity key yet", hint: "sync an enrolled device first, then retry")
                }
                context.emitOrSay(
                    ["enrolled": .bool(false), "code": .string(code)],
                    "This device asked to join. On an enrolled device run 'photoledger device approve \(library.device.rawValue)',\n"
                        + "check that it shows the same code, then sync here.\nCode: \(code)")
            case .plain:
                for note in report.encryptionNotes { context.warn(note) }
                throw CommandFailure(
                    "the library on the server is not end-to-end encrypted; there is nothing to enrol in",
                    hint: "sync as usual; a new encrypted library is made with 'photoledger init --encrypt'")
            }
        }
    }

    /// `device approve NAME --code CODE`.
    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "approve", abstract: "Seal the library's keys for a device that asked to join, after comparing codes.")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Argument(help: "The device's name, as 'device list' shows it.") var name: String
        @Option(
            help: ArgumentHelp(
                "The code the new device shows; without it the expected code is shown and nothing is approved.", valueName: "code"))
        var code: String?

        func run() async throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let engine = try SyncEngine(library: library)
            let requests = try await engine.enrolmentRequests()
            guard let request = requests.first(where: { $0.device.rawValue == name }) else {
                throw CommandFailure(
                    "no device named '\(name)' is waiting to join",
                    hint: "run 'photoledger device enroll' on it first; 'photoledger device list' shows who waits")
            }
            guard let code else {
                context.emitOrSay(
                    ["device": .string(name), "code": .string(request.code), "approved": .bool(false)],
                    "Device \(name) should show the code \(request.code).\n"
                        + "If it does, run: photoledger device approve \(name) --code '\(request.code)'")
                return
            }
            guard code.filter(\.isNumber) == request.code.filter(\.isNumber) else {
                throw CommandFailure(
                    "the code \(code) is not the code of the key the server holds for '\(name)' (\(request.code)); nothing was approved",
                    hint:
                        "someone may have replaced the device's key on the way: ask '\(name)' to enroll again, and never approve a code that differs"
                )
            }
            try await engine.approve(request)
            context.emitOrSay(
                ["device": .string(name), "approved": .bool(true), "addOnly": .bool(request.addOnly)],
                request.addOnly
                    ? "Approved \(name) as an add-only device: after its next sync it adds assets sealed for the library's readers, and reads nothing."
                    : "Approved \(name): it reads the library after its next sync.")
        }
    }

    /// `device list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the devices waiting to join.")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

        func run() async throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let requests = try await SyncEngine(library: library).enrolmentRequests()
            if context.json {
                context.emit(
                    .array(
                        requests.map {
                            .object([("device", .string($0.device.rawValue)), ("code", .string($0.code)), ("addOnly", .bool($0.addOnly))])
                        }))
            } else if requests.isEmpty {
                print("No device is waiting to join.")
            } else {
                for request in requests {
                    print(
                        "\(request.device.rawValue)  waiting\(request.addOnly ? " (add-only: it will add, not read)" : ""), code \(request.code)"
                    )
                }
            }
        }
    }

    /// `device revoke NAME`.
    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke", abstract: "Stop a device from reading what is made from now on (a new library key).",
            discussion: """
                Every later event and asset is sealed with a new library key that the revoked device
                never receives. What it already synced stays on it. Revoke its token on the server as
                well ('photoledger-server admin revoke-token').
                """)

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Argument(help: "The device to revoke.") var name: String
        @Option(
            help: ArgumentHelp(
                "The recovery key, to seal the new key for it too (otherwise it restores only what came before).", valueName: "key"))
        var recoveryKey: String?

        func run() async throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            try await SyncEngine(library: library).revoke(DeviceID(name), recovery: recoveryKey.map(RecoveryKeyText.init))
            context.emitOrSay(
                ["device": .string(name), "revoked": .bool(true)], "Revoked \(name): what is made from now on is sealed with a new key.")
        }
    }

    /// `device restore --recovery-key KEY`.
    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "restore", abstract: "Regain the library's keys with the recovery key shown at 'init --encrypt'.")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Option(help: ArgumentHelp("The recovery key (14 groups of 4 characters).", valueName: "key")) var recoveryKey: String

        func run() async throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let engine = try SyncEngine(library: library)
            try await engine.restore(with: RecoveryKeyText(recoveryKey))
            try await engine.sync()
            context.emitOrSay(["restored": .bool(true)], "Restored the library's keys: this device reads the library again.")
        }
    }
}

/// `photoledger purge ASSET...`.
enum Purge: AssetStateChange {
    static let commandName = "purge"
    static let abstract = "Delete assets in Recently Deleted for good (in an encrypted library, their keys are destroyed everywhere)."
    static let pastTense = "Purged"
    static func apply(to assets: [String], in changes: LibraryChanges) throws { try changes.purgeAssets(assets) }
}

extension Context {
    /// Prints `text`, or emits `fields` as a JSON object with --json.
    func emitOrSay(_ fields: KeyValuePairs<String, JSON>, _ text: String) {
        if json {
            emit(.object(fields.map { ($0.key, $0.value) }))
        } else {
            say(text)
        }
    }
}
