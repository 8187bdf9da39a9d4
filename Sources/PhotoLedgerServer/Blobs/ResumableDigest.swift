import CResumableDigest
import Foundation
import LedgerCore

/// A SHA-256 whose state is plain bytes: an unfinished upload keeps it and continues it when the
/// upload resumes, in this process or, stored beside the upload, in another one of the same build.
struct ResumableDigest: Sendable, Equatable {
    /// The size of a state in bytes.
    static let stateSize = pl_resumable_sha256_state_size()

    /// The state, `stateSize` bytes.
    private(set) var state: [UInt8]

    /// A digest of no bytes.
    init() {
        state = [UInt8](repeating: 0, count: Self.stateSize)
        state.withUnsafeMutableBytes { pl_resumable_sha256_init($0.baseAddress) }
    }

    /// A stored state, when it is one this build made after `length` bytes.
    init?(state: [UInt8], length: Int64) {
        guard state.count == Self.stateSize, length >= 0,
            state.withUnsafeBytes({ pl_resumable_sha256_is_plausible($0.baseAddress, UInt64(length)) }) != 0
        else { return nil }
        self.state = state
    }

    /// The digest of the bytes of a file from its start to `length`, read from `descriptor`.
    init(file descriptor: Int32, length: Int64) throws(BlobUploadFailure) {
        self.init()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while offset < length {
            let wanted = Int(min(Int64(buffer.count), length - offset))
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, wanted, off_t(offset)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                throw .io(
                    "cannot read an unfinished upload: \(count < 0 ? String(cString: strerror(errno)) : "it is shorter than recorded")")
            }
            buffer.withUnsafeBytes { update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            offset += Int64(count)
        }
    }

    /// Adds bytes.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        state.withUnsafeMutableBytes { pl_resumable_sha256_update($0.baseAddress, base, bytes.count) }
    }

    /// The digest of the bytes so far, in lowercase hex (the state may go on).
    var hex: String {
        var digest = [UInt8](repeating: 0, count: 32)
        state.withUnsafeBytes { state in
            digest.withUnsafeMutableBufferPointer { pl_resumable_sha256_peek(state.baseAddress, $0.baseAddress) }
        }
        return Hex.encode(digest)
    }
}
