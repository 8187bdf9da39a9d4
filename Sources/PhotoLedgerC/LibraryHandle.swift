import CPhotoLedger
import Foundation
import PhotoLedger
import Synchronization

/// An open library as the C interface hands it out (`photoledger_library *`): the library, the
/// path it was opened with, and the worker thread of its asynchronous calls, started by the first
/// one. The C handle is a retained reference, released by `photoledger_close`.
final class LibraryHandle: Sendable {
    let library: PhotoLibrary
    /// The library file, absolute.
    let path: String
    private let worker = Mutex<SerialWorker?>(nil)

    init(library: PhotoLibrary, path: String) {
        self.library = library
        self.path = path
    }

    /// Opens (creating when needed) the library at `path` as `device`, else as the device
    /// recorded in it, else as a device named after the host (as the `photoledger` command
    /// does); the first open records the name.
    static func open(path: String, device: String?, preauthorized: Bool) throws -> LibraryHandle {
        let url = URL(fileURLWithPath: path)
        let recorded = PhotoLibrary.recordedDevice(at: url)
        let name = device ?? recorded?.rawValue ?? hostDevice()
        var options = PhotoLibrary.Options()
        options.preauthorized = preauthorized
        let library = try PhotoLibrary(url: url, device: DeviceID(name), options: options)
        if recorded == nil { try library.recordDevice() }
        return LibraryHandle(library: library, path: url.path)
    }

    /// A device name made from the host name (letters, digits, '.', '_' and '-', at most 64).
    static func hostDevice() -> String {
        let allowed = ProcessInfo.processInfo.hostName.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
                ? Character(scalar) : "-"
        }
        let name = String(allowed.prefix(64))
        return name.isEmpty ? "device" : name
    }

    // MARK: The C handle

    /// A retained reference for C.
    func retainedHandle() -> OpaquePointer {
        OpaquePointer(Unmanaged.passRetained(self).toOpaque())
    }

    /// The handle behind a pointer from `retainedHandle()`.
    static func from(_ handle: OpaquePointer) -> LibraryHandle {
        Unmanaged<LibraryHandle>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue()
    }

    /// Stops the worker once the queued jobs have run (waiting for them unless called from one of
    /// them) and releases the C reference.
    static func close(_ handle: OpaquePointer) {
        let unmanaged = Unmanaged<LibraryHandle>.fromOpaque(UnsafeRawPointer(handle))
        unmanaged.takeUnretainedValue().worker.withLock { $0 }?.stop()
        unmanaged.release()
    }

    // MARK: Asynchronous calls

    /// Runs `operation` on the worker thread and gives its outcome to `completion` there.
    func runAsynchronously(_ completion: Completion, _ operation: @escaping @Sendable () throws -> String) throws {
        let worker = self.worker.withLock { worker in
            if let worker { return worker }
            let started = SerialWorker(name: "photoledger")
            worker = started
            return started
        }
        // The job holds the handle, so a close from a completion leaves it alive until the job ends.
        guard worker.submit({ self.complete(completion, operation) }) else {
            throw InterfaceError.invalidArgument("the library is closing; make no call on it after photoledger_close")
        }
    }

    private func complete(_ completion: Completion, _ operation: () throws -> String) {
        do {
            completion.succeed(with: try operation())
        } catch {
            completion.fail(with: InterfaceError(error))
        }
    }
}

/// The completion of an asynchronous call and its user data, called once on the worker thread.
struct Completion: @unchecked Sendable {
    // Safe to share: the function pointer captures nothing, and `userData` is the caller's own,
    // handed back untouched on the worker thread as photoledger.h documents.
    let function: photoledger_completion
    let userData: UnsafeMutableRawPointer?

    func succeed(with result: String) {
        result.withCString { function(photoledger_status(PHOTOLEDGER_OK), $0, nil, userData) }
    }

    func fail(with error: InterfaceError) {
        error.message.withCString { function(error.status, nil, $0, userData) }
    }
}
