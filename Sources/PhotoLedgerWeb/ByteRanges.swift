import Foundation

/// The part of a body a `Range` header asks for (RFC 9110, section 14): one range of bytes.
enum ByteRange: Equatable {
    /// No range asked, or one the server may ignore (another unit, a syntax error, several
    /// ranges): the whole body, 200.
    case whole
    /// The bytes of `range` (upper bound excluded), within the body: 206.
    case part(Range<UInt64>)
    /// A range that starts at or past the end of the body: 416.
    case unsatisfiable

    /// Reads a `Range` header against a body of `size` bytes: `bytes=0-499`, `bytes=500-`
    /// (to the end), `bytes=-500` (the last 500). A last byte past the end is cut to the end.
    static func parse(_ header: String?, size: UInt64) -> ByteRange {
        guard let header else { return .whole }
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes=") else { return .whole }
        let specification = text.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        // Several ranges would need a multipart answer; sending the whole body is allowed instead.
        guard !specification.contains(","), let dash = specification.firstIndex(of: "-") else { return .whole }
        let first = specification[..<dash].trimmingCharacters(in: .whitespaces)
        let last = specification[specification.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        guard first.allSatisfy(\.isASCII), last.allSatisfy(\.isASCII) else { return .whole }
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard let count = UInt64(last) else { return .whole }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .part((size - min(count, size))..<size)
        }
        guard let start = UInt64(first) else { return .whole }
        let end: UInt64
        if last.isEmpty {
            end = size
        } else {
            guard let final = UInt64(last), final >= start else { return .whole }
            end = final >= size ? size : final + 1
        }
        guard start < size else { return .unsatisfiable }
        return .part(start..<end)
    }
}

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
