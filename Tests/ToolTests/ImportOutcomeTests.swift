import Foundation
import MediaSynthesis
import PhotoMedia
import TestSupportKit
import Testing

@Suite("photoledger import: every path ends in one reported outcome")
struct ImportOutcomeTests {
    /// The `files` entries of a `--json` import report, by path.
    func outcomes(_ report: Any) -> [String: [String: Any]] {
        let files = (report as? [String: Any])?["files"] as? [[String: Any]] ?? []
        return Dictionary(files.map { ($0["path"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first })
    }

    @Test func aFolderReportsHiddenFilesSubfoldersLinksFIFOsOddNamesAndNonMedia() throws {
        let workspace = try Workspace()
        let good = try workspace.photo("good.jpg", seed: 1, in: "roll")
        let hidden = try workspace.photo(".hidden.jpg", seed: 2, in: "roll")
        let notes = try workspace.file("notes.txt", Array("not a photo".utf8), in: "roll")
        let audio = try workspace.file("podcast.m4a", try SyntheticMedia.audio(duration: 1), in: "roll")
        try workspace.photo("deep.jpg", seed: 3, in: "roll/sub")
        let roll = workspace.folder.appendingPathComponent("roll").path
        #expect(mkfifo(roll + "/pipe.jpg", 0o600) == 0)
        try FileManager.default.createSymbolicLink(atPath: roll + "/link.jpg", withDestinationPath: good)
        let oddName = Array((roll + "/caf").utf8) + [0xE9] + Array(".jpg".utf8)  // Latin-1 é: not UTF-8
        let descriptor = oddName.withUnsafeBufferPointer { name in
            (Array(name) + [0]).withUnsafeBufferPointer {
                open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644)
            }
        }
        #expect(descriptor >= 0)
        close(descriptor)

        let result = try workspace.cli(["import", roll, "--json"])
        #expect(result.status == 0, "\(result.errors)")
        let report = try result.json()
        let files = outcomes(report)
        #expect(files[good]?["outcome"] as? String == "imported")
        #expect(files[hidden]?["reason"] as? String == "hidden (its name starts with a dot)")
        #expect(files[notes]?["outcome"] as? String == "notMedia")
        #expect((files[audio]?["reason"] as? String)?.hasPrefix("an M4A audio file is not supported") == true)
        #expect(files[roll + "/sub"]?["reason"] as? String == "a folder inside a folder; add --recursive to import it")
        #expect(files[roll + "/pipe.jpg"]?["reason"] as? String == "not a regular file (a FIFO)")
        #expect((files[roll + "/link.jpg"]?["reason"] as? String)?.hasPrefix("a symbolic link") == true)
        #expect(files[roll + "/caf\\xE9.jpg"]?["reason"] as? String == "the name is not valid UTF-8; rename the file to import it")
        #expect(files.count == 8)
        #expect(((report as? [String: Any])?["skipped"] as? [Any])?.count == 5)
        #expect(((report as? [String: Any])?["notMedia"] as? [String])?.sorted() == [notes, audio].sorted())
    }

    @Test func aFIFONamedOnTheCommandLineIsSkippedAtOnce() throws {
        let workspace = try Workspace()
        let fifo = workspace.folder.appendingPathComponent("pipe.jpg").path
        #expect(mkfifo(fifo, 0o600) == 0)
        // Opening a FIFO nothing writes to would block for ever: that the command ends at all shows it was skipped.
        let result = try workspace.cli(["import", fifo])
        #expect(result.status == 0)
        #expect(result.output.contains("skipped \(fifo): not a regular file (a FIFO)"), "\(result.output)")
        #expect(result.output.contains("1 other path skipped; 0 failed."))
    }

    @Test func damagedFilesFailAndTruncatedOnesSaySo() throws {
        let workspace = try Workspace()
        let jpeg = SyntheticMedia.sample(.jpeg, width: 64, height: 48, seed: 4)
        let cut = try workspace.file("cut.jpg", Array(jpeg.prefix(jpeg.count / 2)))
        let result = try workspace.cli(["import", cut])
        #expect(result.status == 1)
        #expect(result.errors.contains("failed: \(cut): truncated JPEG: the file ends before its image data does"), "\(result.errors)")
        #expect(result.errors.contains("copy the file again from its source; nothing was saved"))
    }

    @Test func aFolderThatCannotBeReadIsSkippedWithTheReason() throws {
        guard getuid() == 0 else { return try unreadableFolder(asRoot: false) }
        try unreadableFolder(asRoot: true)
    }

    /// As root, permissions do not stop reading: the tool then runs as `nobody` (setpriv).
    private func unreadableFolder(asRoot: Bool) throws {
        let workspace = try Workspace()
        try workspace.photo("a.jpg", seed: 5, in: "locked")
        let locked = workspace.folder.appendingPathComponent("locked").path
        var arguments = ["import", locked, "--library", workspace.library.path, "--json"]
        var tool = "photoledger"
        if asRoot {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return }
            try SyntheticMedia.run(tool: "chmod", ["-R", "a+rwX", workspace.folder.path])
            arguments =
                ["--reuid=65534", "--regid=65534", "--clear-groups", ToolRunner.binDirectory.appendingPathComponent(tool).path] + arguments
            tool = "setpriv"
        }
        #expect(chmod(locked, 0o000) == 0)
        defer { chmod(locked, 0o755) }
        let result = try asRoot ? runSetpriv(arguments) : ToolRunner.run(tool, arguments)
        #expect(result.status == 0, "\(result.errors)")
        let files = outcomes(try result.json())
        #expect((files[locked]?["reason"] as? String)?.hasPrefix("the folder cannot be read (Permission denied)") == true, "\(files)")
    }

    private func runSetpriv(_ arguments: [String]) throws -> ToolResult {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ToolResult(
            status: process.terminationStatus, output: String(decoding: data, as: UTF8.self),
            errors: String(decoding: errorData, as: UTF8.self))
    }
}
