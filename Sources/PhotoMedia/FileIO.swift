import Foundation

/// Thin, checked wrappers of the POSIX calls the resource store needs, reporting failures as
/// `MediaError` values that name the resource and the system's reason.
enum FileIO {
    /// The system's text for the current `errno`.
    static func lastError() -> String { String(cString: strerror(errno)) }

    /// Opens a source file for reading (without blocking on a FIFO or a device) and checks that
    /// it is a regular file; the caller closes the descriptor. `missingResource` when it does not
    /// exist; `invalidResource` with refusal `notRegularFile` for a folder, FIFO, device or
    /// socket, and `unreadable` when the system refuses to open it.
    static func openRegularFile(_ url: URL, name: String) throws(MediaError) -> (descriptor: Int32, status: stat) {
        let path = url.path
        var descriptor: Int32
        repeat { descriptor = Foundation.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR {
                throw MediaError(.missingResource, resource: name, reason: "the file does not exist (\(path))")
            }
            if code == ENXIO {  // a FIFO without a writer, a socket
                throw MediaError(
                    .invalidResource, resource: name, reason: "not a regular file (a FIFO or socket)", refusal: .notRegularFile)
            }
            throw MediaError(.invalidResource, resource: name, reason: "unreadable (\(lastError()))", refusal: .unreadable)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = lastError()
            close(descriptor)
            throw MediaError(.invalidResource, resource: name, reason: "unreadable (\(reason))", refusal: .unreadable)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw MediaError(
                .invalidResource, resource: name, reason: "not a regular file (\(describeType(status.st_mode)))", refusal: .notRegularFile)
        }
        return (descriptor, status)
    }

    /// Words for the type of a file that is not a regular one.
    static func describeType(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a folder"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "not a regular file"
        }
    }

    static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644, name: String) throws(MediaError) -> Int32 {
        while true {
            let descriptor = Foundation.open(path, flags | O_CLOEXEC, mode)
            if descriptor >= 0 { return descriptor }
            if errno == EINTR { continue }
            if errno == ENOENT || errno == ENOTDIR {
                throw MediaError(.missingResource, resource: name, reason: "the file does not exist (\(path))")
            }
            if errno == EEXIST { throw MediaError(.fileSystem, resource: name, reason: "\(path) already exists") }
            throw MediaError(.fileSystem, resource: name, reason: "could not open \(path) (\(lastError()))")
        }
    }

    /// Reads up to `buffer.count` bytes; fewer only at the end of the file.
    static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, name: String) throws(MediaError) -> Int {
        var done = 0
        while done < buffer.count {
            let result = Foundation.read(descriptor, buffer.baseAddress! + done, buffer.count - done)
            if result < 0 && errno == EINTR { continue }
            guard result >= 0 else { throw MediaError(.fileSystem, resource: name, reason: "could not read (\(lastError()))") }
            if result == 0 { break }
            done += result
        }
        return done
    }

    /// Writes all of `bytes`.
    static func write(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, name: String) throws(MediaError) {
        var done = 0
        while done < bytes.count {
            let result = Foundation.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { throw MediaError(.fileSystem, resource: name, reason: "could not write (\(lastError()))") }
            done += result
        }
    }

    /// Flushes a file's data and metadata to the disk.
    static func sync(_ descriptor: Int32, name: String) throws(MediaError) {
        guard fsync(descriptor) == 0 else { throw MediaError(.fileSystem, resource: name, reason: "could not fsync (\(lastError()))") }
    }

    /// Flushes a directory, making the names created or renamed in it durable.
    static func syncDirectory(_ path: String, name: String) throws(MediaError) {
        let descriptor = try open(path, O_RDONLY | O_DIRECTORY, name: name)
        defer { close(descriptor) }
        try sync(descriptor, name: name)
    }

    /// Creates a directory (and its parents) when missing; returns whether it was created.
    @discardableResult
    static func makeDirectory(_ path: String, name: String) throws(MediaError) -> Bool {
        if mkdir(path, 0o755) == 0 { return true }
        if errno == EEXIST { return false }
        if errno == ENOENT {
            try makeDirectory((path as NSString).deletingLastPathComponent, name: name)
            return try makeDirectory(path, name: name)
        }
        throw MediaError(.fileSystem, resource: name, reason: "could not create the directory \(path) (\(lastError()))")
    }

    /// The `stat` of a path, or nil when it does not exist.
    static func status(_ path: String) -> stat? {
        var status = stat()
        return lstat(path, &status) == 0 ? status : nil
    }

    /// Seconds since the epoch of a file's last modification.
    static func modificationTime(_ status: stat) -> Double {
        Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9
    }
}
