import Foundation

/// Why a file could not be opened for sending.
struct FileOpenError: Error {
    let reason: String
}

extension FileSlice {
    /// The whole regular file at `path`, open for reading.
    static func open(_ path: String) throws(FileOpenError) -> FileSlice {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileOpenError(reason: "\(path): \(String(cString: strerror(errno)))") }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw FileOpenError(reason: "\(path) is not a readable file")
        }
        return FileSlice(descriptor: descriptor, offset: 0, length: UInt64(status.st_size))
    }

    /// The bytes of `range` of this file (positions from the file's start), as a slice that
    /// takes over the descriptor.
    func part(_ range: Range<UInt64>) -> FileSlice {
        FileSlice(descriptor: take(), offset: range.lowerBound, length: UInt64(range.count))
    }
}
