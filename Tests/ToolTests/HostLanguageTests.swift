import CPhotoLedger
import Foundation
import PhotoLedger
import TestSupportKit
import Testing

/// The C library, its header, the Lua module and the Python package, driven from the real tools:
/// `cc`, `c++`, `make`, `lua5.4`, `python3` and `pip` run the programs and scripts of
/// `Tests/ToolTests/HostLanguages`, and the `photoledger` command checks the library they leave.
@Suite(
    "Host languages: C, C++, Lua and Python over libphotoledger",
    .enabled(if: TestGate.hostLanguages.isOpen, "\(TestGate.hostLanguages.skipReason)"))
struct HostLanguageTests {
    /// The package's root folder.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let include = root.appendingPathComponent("Sources/CPhotoLedger/include")
    static let scripts = root.appendingPathComponent("Tests/ToolTests/HostLanguages")
    static let builtLibrary = ToolRunner.binDirectory.appendingPathComponent("libPhotoLedgerC.so")

    /// A workspace with the files the seed flow needs, and libphotoledger under its installed
    /// names (libphotoledger.so.1, libphotoledger.so) in `lib/`.
    final class Host {
        let workspace: Workspace
        let lib: URL
        let photo: String
        let temporary: String
        let notImage: String
        let missing: String
        let badLibrary: String

        init() throws {
            workspace = try Workspace(initialize: false)
            lib = workspace.folder.appendingPathComponent("lib")
            try FileManager.default.createDirectory(at: lib, withIntermediateDirectories: true)
            for name in ["libphotoledger.so.1", "libphotoledger.so"] {
                try FileManager.default.createSymbolicLink(
                    at: lib.appendingPathComponent(name), withDestinationURL: HostLanguageTests.builtLibrary)
            }
            photo = try workspace.photo("kept.jpg", seed: 1)
            temporary = try workspace.photo("capture-tmp.jpg", seed: 2, in: "tmp")
            notImage = try workspace.file("notes.jpg", Array("shopping list: milk, eggs\n".utf8))
            missing = workspace.folder.appendingPathComponent("photos/gone.jpg").path
            badLibrary = workspace.folder.appendingPathComponent("no-such-folder/library.sqlite").path
        }

        var library: String { workspace.library.path }

        /// Runs a program; fails the test when it cannot start.
        func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ToolResult {
            try ToolRunner.run(executable: URL(fileURLWithPath: executable), arguments, environment: environment)
        }

        /// Compiles `source` with `compiler` against photoledger.h and libphotoledger.
        func compile(_ compiler: String, _ source: String, standard: String) throws -> String {
            let output = workspace.folder.appendingPathComponent(source + ".out").path
            let result = try run(
                "/usr/bin/env",
                [
                    compiler, "-std=\(standard)", "-Wall", "-Wextra", "-Werror", "-pedantic", "-pthread", "-I",
                    HostLanguageTests.include.path,
                    HostLanguageTests.scripts.appendingPathComponent(source).path, "-L", lib.path, "-lphotoledger",
                    "-Wl,-rpath," + lib.path,
                    "-o", output,
                ])
            #expect(result.status == 0, "\(compiler) \(source) failed: \(result.errors)")
            return output
        }

        /// Builds the Lua module with its Makefile; returns the `LUA_CPATH` that finds it.
        func luaModule() throws -> String {
            let out = workspace.folder.appendingPathComponent("lua").path
            let result = try run(
                "/usr/bin/env",
                [
                    "make", "-s", "-C", HostLanguageTests.root.appendingPathComponent("Tools/bindings/lua").path,
                    "BUILD=\(ToolRunner.binDirectory.path)", "LIB_DIR=\(lib.path)", "OUT_DIR=\(out)",
                ])
            #expect(result.status == 0, "building the Lua module failed: \(result.output) \(result.errors)")
            return out + "/?.so;;"
        }

        /// Runs a Lua script of HostLanguages with `lua5.4`.
        func lua(_ script: String, _ arguments: [String]) throws -> ToolResult {
            let cpath = try luaModule()
            return try run(
                "/usr/bin/env", ["lua5.4", HostLanguageTests.scripts.appendingPathComponent(script).path] + arguments,
                environment: ["LUA_CPATH": cpath])
        }

        /// Runs a Python script of HostLanguages with `python3` and the package from the repository.
        func python(_ script: String, _ arguments: [String], path: String? = nil) throws -> ToolResult {
            let environment = [
                "PYTHONPATH": path ?? HostLanguageTests.root.appendingPathComponent("Tools/bindings/python").path,
                "PHOTOLEDGER_LIBRARY": HostLanguageTests.builtLibrary.path, "PYTHONDONTWRITEBYTECODE": "1",
            ]
            return try run(
                "/usr/bin/env", ["python3", HostLanguageTests.scripts.appendingPathComponent(script).path] + arguments,
                environment: environment)
        }

        /// The identifiers of the album titled Trip, in album order, as `photoledger albums` lists them.
        func trip() throws -> [String] {
            try workspace.albums().first { $0["title"] as? String == "Trip" }?["assetIdentifiers"] as? [String] ?? []
        }

        func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }
    }

    /// The value after `prefix ` on the line of `output` that starts with it.
    static func line(_ prefix: String, in output: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix(prefix + " ") }.map { String($0.dropFirst(prefix.count + 1)) }
    }

    // MARK: C and C++

    @Test func aCProgramDoesTheSeedFlowAndMeetsTheDocumentedErrors() throws {
        let host = try Host()
        let program = try host.compile("cc", "seed.c", standard: "c11")
        let thumbnail = host.workspace.folder.appendingPathComponent("thumb.jpg").path
        let result = try host.run(
            program, [host.library, host.photo, host.temporary, host.notImage, host.missing, host.badLibrary, thumbnail])
        #expect(result.status == 0, "seed failed: \(result.output) \(result.errors)")
        let output = result.output
        #expect(Self.line("version", in: output) == "1.0.0 1.0.0")
        let first = try #require(Self.line("saved", in: output))
        let completion = try #require(Self.line("completion", in: output))
        #expect(completion.hasPrefix("0 "), "the completion got \(completion)")
        let saved = String(completion.dropFirst(2))
        #expect(Self.line("completion-thread", in: output) == "photoledger other", "the completion runs on the library's worker thread")
        #expect(Self.line("closed-in-completion", in: output) == "0", "a completion closed its own library")
        #expect(try host.trip() == [saved, first], "the asset saved last is the album's first")
        #expect(!host.exists(host.temporary), "the moved temporary file is removed after the save")
        #expect(host.exists(host.photo), "a copied file stays")
        #expect(Self.line("not-an-image", in: output)?.hasPrefix("3302 invalidResource notes.jpg: ") == true, "\(output)")
        #expect(Self.line("not-an-image", in: output)?.contains("nothing was saved") == true)
        #expect(host.exists(host.notImage), "a file that failed is kept, even with PHOTOLEDGER_SAVE_MOVE_FILE")
        #expect(Self.line("missing", in: output)?.hasPrefix("3303 missingResource gone.jpg: the file does not exist") == true, "\(output)")
        #expect(Self.line("null-library", in: output)?.hasPrefix("5001 invalidArgument the library is NULL") == true)
        #expect(
            Self.line("bad-library", in: output)?.hasPrefix("-1 internalError could not open the library at \(host.badLibrary)") == true,
            "\(output)")
        let report = try #require(Self.line("thumbnail", in: output))
        let json = try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any]
        #expect(json?["localIdentifier"] as? String == saved && json?["file"] as? String == thumbnail)
        #expect(json?["pixelWidth"] as? Int == 48 && json?["uniformTypeIdentifier"] as? String == "public.jpeg" && host.exists(thumbnail))
        // The listing is the photoledger command's, byte for byte.
        let albums = try host.workspace.cli(["albums", "--json"])
        #expect(Self.line("albums", in: output) == albums.output.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(output.hasSuffix("closed\n"))
    }

    @Test func aCppProgramUsesTheHeaderWithRAIIAndALambdaCompletion() throws {
        let host = try Host()
        let program = try host.compile("c++", "seed.cpp", standard: "c++17")
        let result = try host.run(program, [host.library, host.temporary])
        #expect(result.status == 0, "seed failed: \(result.output) \(result.errors)")
        let completion = try #require(Self.line("completion", in: result.output))
        #expect(completion.hasPrefix("0 "))
        #expect(try host.trip() == [String(completion.dropFirst(2))] && !host.exists(host.temporary))
        let assets = try #require(Self.line("assets", in: result.output))
        #expect(assets == (try host.workspace.cli(["assets", "--json"]).output.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    @Test func oneHandleServesSeveralThreadsAtOnce() throws {
        let host = try Host()
        let program = try host.compile("cc", "threads.c", standard: "c11")
        let result = try host.run(program, [host.library, host.photo])
        #expect(result.status == 0 && Self.line("failures", in: result.output) == "0", "\(result.output) \(result.errors)")
        let albums = try host.workspace.albums()
        #expect(albums.count == 1, "the album is found or created once: \(albums)")
        #expect((albums.first?["assetIdentifiers"] as? [String])?.count == 20)
    }

    @Test(
        "the header alone compiles as C11 and C++17 with -Wall -Wextra -Werror -pedantic",
        arguments: [("cc", "c11", "c"), ("c++", "c++17", "c++")])
    func headerCompilesCleanly(compiler: String, standard: String, language: String) throws {
        let result = try ToolRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            [
                compiler, "-x", language, "-std=\(standard)", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-I",
                Self.include.path,
                Self.include.appendingPathComponent("photoledger.h").path,
            ])
        #expect(result.status == 0, "\(compiler) -std=\(standard): \(result.errors)")
    }

    @Test func everyFunctionOfTheHeaderIsExportedWithItsSymbolVersionAndNothingElse() throws {
        let header = try String(contentsOf: Self.include.appendingPathComponent("photoledger.h"), encoding: .utf8)
        let declared = Set(header.matches(of: /\b(photoledger_[a-z_]+)\(/).map { String($0.output.1) })
        let symbols = try ToolRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/env"), ["readelf", "--dyn-syms", "-W", Self.builtLibrary.path])
        #expect(symbols.status == 0, "\(symbols.errors)")
        var exported: [String: String] = [:]
        for line in symbols.output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // Defined global functions and objects (not UND; not the ABS symbol naming the version node).
            guard fields.count >= 8, fields[4] == "GLOBAL", fields[6] != "UND", fields[6] != "ABS",
                fields[3] == "FUNC" || fields[3] == "OBJECT"
            else {
                continue
            }
            let name = fields[7].split(separator: "@", maxSplits: 1)
            exported[String(name[0])] = name.count > 1 ? String(name[1]) : ""
        }
        let script = try String(contentsOf: Self.root.appendingPathComponent("Sources/CPhotoLedger/photoledger.map"), encoding: .utf8)
        #expect(
            Set(script.matches(of: /(photoledger_[a-z_]+);/).map { String($0.output.1) }) == declared,
            "the version script lists the header's functions")
        #expect(declared.count == 29)
        #expect(
            Set(exported.keys) == declared,
            "exported but not declared: \(Set(exported.keys).subtracting(declared)); missing: \(declared.subtracting(exported.keys))")
        #expect(exported.values.allSatisfy { $0 == "@PHOTOLEDGER_1.0" }, "\(exported.filter { $0.value != "@PHOTOLEDGER_1.0" })")
        let dynamic = try ToolRunner.run(executable: URL(fileURLWithPath: "/usr/bin/env"), ["readelf", "-d", Self.builtLibrary.path])
        #expect(dynamic.output.contains("Library soname: [libphotoledger.so.1]"))
    }

    @Test func theStatusCodesAreTheLibrarysErrorCodes() {
        let codes: [PhotoLibraryError.Code] = [
            .internalError, .userCancelled, .persistentChangeTokenExpired, .networkAccessRequired, .networkError, .identifierNotFound,
            .persistentChangeDetailsUnavailable, .changeNotSupported, .operationInterrupted, .invalidResource, .missingResource,
            .notEnoughSpace, .requestNotSupportedForAsset, .accessRestricted, .accessUserDenied,
        ]
        for code in codes {
            #expect(String(cString: photoledger_status_name(photoledger_status(code.rawValue))) == code.description)
        }
        #expect(PHOTOLEDGER_ERROR_MISSING_RESOURCE == PhotoLibraryError.Code.missingResource.rawValue)
        #expect(PHOTOLEDGER_ERROR_INVALID_RESOURCE == PhotoLibraryError.Code.invalidResource.rawValue)
        #expect(String(cString: photoledger_status_name(12345)) == "unknown")
    }

    // MARK: Lua

    @Test func luaDoesTheSeedFlowWithCallbacksOnItsOwnThread() throws {
        let host = try Host()
        let thumbnail = host.workspace.folder.appendingPathComponent("thumb.jpg").path
        let result = try host.lua("seed.lua", [host.library, host.photo, host.temporary, thumbnail])
        #expect(result.status == 0, "seed.lua failed: \(result.output) \(result.errors)")
        let output = result.output
        #expect(Self.line("before", in: output) == "wait false", "the callback ran before lib:wait()")
        #expect(Self.line("waited", in: output) == "1" && Self.line("pending", in: output) == "0")
        let callback = try #require(Self.line("callback", in: output))
        #expect(callback.hasPrefix("true "))
        let first = try #require(Self.line("saved", in: output))
        #expect(try host.trip() == [String(callback.dropFirst(5)), first])
        #expect(!host.exists(host.temporary) && host.exists(host.photo))
        #expect(Self.line("blocking", in: output) == "true")
        let report = try JSONSerialization.jsonObject(with: Data((Self.line("thumbnail", in: output) ?? "").utf8)) as? [String: Any]
        #expect(report?["localIdentifier"] as? String == first && report?["file"] as? String == thumbnail && host.exists(thumbnail))
        #expect(output.hasSuffix("closed photoledger.library (closed)\n"))
    }

    @Test func luaChangesMembershipFlagsAndDeletion() throws {
        let host = try Host()
        let second = try host.workspace.photo("second.jpg", seed: 3)
        let result = try host.lua("api.lua", [host.library, host.photo, second])
        #expect(result.status == 0, "api.lua failed: \(result.output) \(result.errors)")
        for (step, value) in [
            ("added", "true"), ("removed", "true"), ("favorite", "true"), ("unfavorite", "true"), ("hidden", "1"), ("shown", "0"),
            ("deleted", "true"), ("recovered", "true"),
        ] {
            #expect(Self.line(step, in: result.output) == value, "\(step): \(result.output)")
        }
        #expect(
            Self.line("unknown", in: result.output)?.hasPrefix("nil identifierNotFound no asset with identifier") == true,
            "\(result.output)")
    }

    @Test func luaErrorsAreNilMessageAndStatusName() throws {
        let host = try Host()
        let result = try host.lua("errors.lua", [host.library, host.notImage, host.missing, host.badLibrary])
        #expect(result.status == 0, "errors.lua failed: \(result.output) \(result.errors)")
        let output = result.output
        #expect(Self.line("not-an-image", in: output)?.hasPrefix("nil invalidResource notes.jpg: ") == true, "\(output)")
        #expect(host.exists(host.notImage), "a file that failed is kept")
        #expect(Self.line("missing", in: output) == "nil missingResource gone.jpg: the file does not exist (\(host.missing))")
        #expect(
            Self.line("bad-library", in: output)?.hasPrefix("nil internalError could not open the library at \(host.badLibrary)") == true)
        #expect(Self.line("unknown-album", in: output)?.hasPrefix("nil identifierNotFound no album with identifier") == true)
        #expect(Self.line("callback", in: output) == "false missingResource gone.jpg: the file does not exist (\(host.missing))")
        #expect(Self.line("after-close", in: output) == "false the library is closed; open it again with photoledger.open")
    }

    @Test func aLuaCallbackThatRaisesComesOutOfWaitWithoutCrashing() throws {
        let host = try Host()
        let result = try host.lua("raising.lua", [host.library, host.photo])
        #expect(result.status == 0, "raising.lua failed: \(result.output) \(result.errors)")
        #expect(Self.line("wait", in: result.output)?.hasPrefix("false ") == true)
        #expect(Self.line("wait", in: result.output)?.hasSuffix("raised in the callback") == true)
        #expect(Self.line("pending", in: result.output) == "0")
        #expect(result.output.hasSuffix("survived\n"))
        #expect(try host.trip().count == 2, "the save whose callback raised committed, and so did the next")
    }

    @Test func luaSyncsWithTheRemoteAndAnotherDeviceSeesTheAlbum() throws {
        let host = try Host()
        let server = try TestServer(folder: host.workspace.folder)
        let remote = "\(server.url)/v1/libraries/family"
        let result = try host.lua("sync.lua", [host.library, host.photo, remote, try server.token(for: "lua-host")])
        #expect(result.status == 0, "sync.lua failed: \(result.output) \(result.errors)")
        #expect(Self.line("no-remote", in: result.output) == "nil syncNoRemote")
        let saved = try #require(Self.line("saved", in: result.output))
        let report = try #require(Self.line("report", in: result.output))
        let json = try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any]
        #expect((json?["pushedEvents"] as? Int ?? 0) > 0 && json?["uploadedResources"] as? Int == 1, "\(report)")
        let again = try JSONSerialization.jsonObject(with: Data((Self.line("again", in: result.output) ?? "").utf8)) as? [String: Any]
        #expect(again?["pushedEvents"] as? Int == 0)
        // Another device, through the photoledger command.
        let ben = try Workspace(device: "ben")
        #expect(try ben.cli(["remote", "set", remote, "--token", try server.token(for: "ben")]).status == 0)
        #expect(try ben.cli(["sync"]).status == 0)
        #expect(try ben.albums().first { $0["title"] as? String == "Trip" }?["assetIdentifiers"] as? [String] == [saved])
    }

    // MARK: Python

    @Test func pythonReachesTheWholeInterface() throws {
        let host = try Host()
        let second = try host.workspace.photo("second.jpg", seed: 3)
        let out = host.workspace.folder.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let result = try host.python("api.py", [host.library, host.photo, second, out.path])
        #expect(result.status == 0, "api.py failed: \(result.output) \(result.errors)")
        let expected: [(String, String)] = [
            ("order", "True"), ("renamed", "['Family 2026']"), ("removed", "True"), ("favorites", "True"), ("hidden", "[True]"),
            ("deleted", "True"), ("recovered", "True"), ("exported", "True"), ("thumbnail", "48 32 public.jpeg"),
            ("thumbnail-async", "True True"),
            ("history", "asset.created python-host True"), ("history-device", "True True"), ("status", "2 1 python-host None"),
            ("delete-album", "no error"), ("albums-left", "[]"),
        ]
        for (step, value) in expected {
            #expect(Self.line(step, in: result.output) == value, "\(step): \(result.output)")
        }
        let failures: [(String, String)] = [
            ("sync", "4008 syncNoRemote no remote is set"), ("sync-async", "4008 syncNoRemote"),
            ("bad-remote", "4001 syncInvalidRemote invalid remote"),
            ("unknown-asset", "3201 identifierNotFound no asset with identifier"),
            ("export-exists", "5001 invalidArgument \(out.path)/exported.jpg already exists"),
            ("index-past-end", "3301 operationInterrupted index 5 is out of range"), ("thumbnail-exists", "5001 invalidArgument"),
        ]
        for (step, prefix) in failures {
            #expect(Self.line(step, in: result.output)?.hasPrefix(prefix) == true, "\(step): \(result.output)")
        }
    }

    @Test func pythonDoesTheSeedFlow() throws {
        let host = try Host()
        let result = try host.python("seed.py", [host.library, host.photo, host.temporary])
        #expect(result.status == 0, "seed.py failed: \(result.output) \(result.errors)")
        let output = result.output
        let first = try #require(Self.line("saved", in: output))
        let future = try #require(Self.line("future", in: output))
        #expect(Self.line("callback", in: output) == "\(future) None worker-thread")
        #expect(Self.line("first", in: output) == future)
        #expect(try host.trip() == [future, first])
        #expect(!host.exists(host.temporary) && host.exists(host.photo))
        #expect(Self.line("assets", in: output) == "2" && output.hasSuffix("closed\n"))
    }

    @Test func pythonErrorsAreExceptionsWithTheDocumentedCodes() throws {
        let host = try Host()
        let result = try host.python("errors.py", [host.library, host.notImage, host.missing, host.badLibrary])
        #expect(result.status == 0, "errors.py failed: \(result.output) \(result.errors)")
        let output = result.output
        #expect(
            Self.line("not-an-image", in: output)?.hasPrefix("InvalidResourceError 3302 invalidResource notes.jpg: ") == true, "\(output)")
        #expect(host.exists(host.notImage))
        #expect(
            Self.line("missing", in: output)
                == "MissingResourceError 3303 missingResource gone.jpg: the file does not exist (\(host.missing))")
        #expect(Self.line("bad-library", in: output)?.hasPrefix("PhotoLedgerError -1 internalError could not open the library at") == true)
        #expect(Self.line("callback", in: output)?.hasPrefix("MissingResourceError 3303") == true)
        #expect(Self.line("unknown-album", in: output)?.hasPrefix("IdentifierNotFoundError 3201 identifierNotFound") == true)
        #expect(Self.line("after-close", in: output)?.hasPrefix("InvalidArgumentError 5001 invalidArgument the library is closed") == true)
        #expect(Self.line("not-authorized", in: output)?.hasPrefix("AccessDeniedError 3311 accessUserDenied") == true, "\(output)")
    }

    @Test func aPythonCallbackThatRaisesFailsItsFutureWithoutCrashing() throws {
        let host = try Host()
        let result = try host.python("raising.py", [host.library, host.photo])
        #expect(result.status == 0, "raising.py failed: \(result.output) \(result.errors)")
        #expect(Self.line("future", in: result.output) == "Raised raised in the callback")
        // The queued call's callback and the script's last line come in either order.
        let end = result.output.components(separatedBy: "survived\n")
        #expect(end.count == 2 && end[1].split(separator: "\n").sorted() == ["at exit True None", "exiting"], "\(result.output)")
        #expect(try host.trip().count == 3, "the save whose callback raised, the next, and the one queued at exit")
    }

    @Test func thePythonPackageInstallsWithPip() throws {
        let host = try Host()
        // A copy, so the build leaves nothing in the repository.
        let source = host.workspace.folder.appendingPathComponent("python-source")
        try FileManager.default.copyItem(at: Self.root.appendingPathComponent("Tools/bindings/python"), to: source)
        let site = host.workspace.folder.appendingPathComponent("site").path
        let install = try host.run(
            "/usr/bin/env",
            ["python3", "-m", "pip", "install", "--quiet", "--no-index", "--target", site, source.path],
            environment: ["PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1"])
        #expect(install.status == 0, "pip install failed: \(install.output) \(install.errors)")
        let result = try host.python("seed.py", [host.library, host.photo, host.temporary], path: site)
        #expect(result.status == 0, "seed.py from the installed package failed: \(result.errors)")
        #expect(try host.trip().count == 2)
    }
}
