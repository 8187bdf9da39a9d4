import CMicroHTTPD
import Foundation

/// A libmicrohttpd response whose body is read from `stream` while it is sent, in pieces of up
/// to 64 KB; libmicrohttpd releases the stream (cancelling what is left) when it is done.
func streamedResponse(_ stream: any BlobStream) -> OpaquePointer? {
    let context = Unmanaged.passRetained(StreamBox(stream)).toOpaque()
    guard let handle = MHD_create_response_from_callback(UInt64(stream.size), 64 * 1024, readStream, context, releaseStream) else {
        Unmanaged<StreamBox>.fromOpaque(context).release()
        stream.cancel()
        return nil
    }
    return handle
}

/// Holds the stream for the C callbacks.
private final class StreamBox {
    let stream: any BlobStream
    init(_ stream: any BlobStream) { self.stream = stream }
}

private let readStream: MHD_ContentReaderCallback = { context, _, buffer, maximum in
    guard let context, let buffer else { return -2 }  // MHD_CONTENT_READER_END_WITH_ERROR
    let stream = Unmanaged<StreamBox>.fromOpaque(context).takeUnretainedValue().stream
    do {
        let count = try stream.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: maximum))
        return count == 0 ? -1 : count  // MHD_CONTENT_READER_END_OF_STREAM
    } catch {
        return -2
    }
}

private let releaseStream: MHD_ContentReaderFreeCallback = { context in
    guard let context else { return }
    let box = Unmanaged<StreamBox>.fromOpaque(context).takeRetainedValue()
    box.stream.cancel()
}
