import CFFmpeg
import CMediaDecoding
import Foundation
import LedgerCore

/// Movies through FFmpeg (libavformat, libavcodec): the file must hold a video stream (a cover
/// picture in an audio file is none), its first frame must decode, and the demuxer's index must
/// lie within the file. Size, rotation, duration, creation date and location are what the
/// demuxer read.
enum MovieDecoder {
    /// The most packets read while looking for the first video frame.
    static let maximumPacketsBeforeFirstFrame = 4096

    /// FFmpeg quiet, and no allocation of one block over ``largestAllocation``: a demuxer
    /// allocates what a file declares (a 2 KB QuickTime file whose metadata claims 185 million
    /// keys asked for 1.5 GB, and took 2 s to refuse), so such a file is refused at once.
    private static let configured: Void = {
        av_log_set_level(AV_LOG_QUIET)
        av_max_alloc(largestAllocation)
    }()

    /// The largest block FFmpeg may allocate: 512 MB, more than one plane of the largest frame
    /// PhotoMedia decodes (`MediaInfo.fits`: 2^28 pixels).
    static let largestAllocation = 512 << 20

    /// Applies FFmpeg's settings (above) before any use of it.
    static func configure() { configured }

    static func inspect(path: String, format: MediaFormat) throws -> MediaInfo {
        try withVideoStream(path: path, format: format) { context, streams, video in
            try checkIndex(streams, context: context, format: format)
            var width = Int(video.pointee.codecpar.pointee.width), height = Int(video.pointee.codecpar.pointee.height)
            // Checked before the decoder allocates the frame, and again for the size it decoded.
            guard MediaInfo.fits(width: width, height: height) else { throw MediaInfo.tooLarge(format, width: width, height: height) }
            let decoded = try decodeFirstFrame(of: video, in: context, format: format) { frame in
                (Int(frame.pointee.width), Int(frame.pointee.height))
            }
            if width <= 0 || height <= 0 { (width, height) = decoded }
            guard MediaInfo.fits(width: width, height: height) else { throw MediaInfo.tooLarge(format, width: width, height: height) }
            let orientation = orientation(of: video)
            let metadata = context.pointee.metadata
            return MediaInfo(
                format: format, pixelWidth: orientation.swapsWidthAndHeight ? height : width,
                pixelHeight: orientation.swapsWidthAndHeight ? width : height, orientation: orientation,
                duration: duration(context, video), creationDate: creationDate(metadata, video.pointee.metadata),
                location: location(metadata))
        }
    }

    /// The movie's poster frame: its first decodable frame, turned as its display matrix says
    /// and scaled into `scale` by libvips.
    static func posterFrame(path: String, format: MediaFormat, scale: RenditionScale) throws -> Picture {
        try withVideoStream(path: path, format: format) { context, _, video in
            let orientation = orientation(of: video)
            return try decodeFirstFrame(of: video, in: context, format: format) { frame throws(InvalidMedia) in
                let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
                let stride = width * 3
                var pixels = [UInt8](repeating: 0, count: stride * height)
                guard pixels.withUnsafeMutableBufferPointer({ photoledger_frame_to_rgb(frame, $0.baseAddress, Int32(stride)) }) == 0 else {
                    let name = av_get_pix_fmt_name(AVPixelFormat(frame.pointee.format)).map { String(cString: $0) } ?? "unknown"
                    throw InvalidMedia("FFmpeg cannot convert the first frame's pixel format (\(name)) to RGB")
                }
                var picture: OpaquePointer?
                var message = [CChar](repeating: 0, count: 512)
                let status = photoledger_picture_from_rgb(
                    pixels, Int32(width), Int32(height), stride, Int32(orientation.rawValue), scale.c, &picture, &message, message.count)
                guard status == 0, let picture else {
                    throw InvalidMedia("libvips could not scale the poster frame (\(Picture.text(message)))")
                }
                return Picture(picture, madeFor: scale)
            }
        }
    }

    /// Opens the movie and finds its video stream (a cover picture in an audio file is none),
    /// then runs `body` with the demuxer, every stream and the video stream.
    private static func withVideoStream<T>(
        path: String, format: MediaFormat,
        _ body: (UnsafeMutablePointer<AVFormatContext>, [UnsafeMutablePointer<AVStream>], UnsafeMutablePointer<AVStream>) throws -> T
    ) throws -> T {
        configure()
        var context: UnsafeMutablePointer<AVFormatContext>?
        let opened = avformat_open_input(&context, path, nil, nil)
        if opened == photoledger_averror_nomem() {
            throw InvalidMedia(
                "damaged \(format.name): its structure declares more than a movie needs (FFmpeg allocates at most "
                    + "\(largestAllocation >> 20) MB at once for it)")
        }
        guard opened == 0, let context else {
            throw InvalidMedia(describe(opened, "damaged \(format.name): FFmpeg cannot read its structure"))
        }
        defer {
            var closing: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&closing)
        }
        let found = avformat_find_stream_info(context, nil)
        guard found >= 0 else { throw InvalidMedia(describe(found, "damaged \(format.name): FFmpeg cannot read its streams")) }
        let streams = (0..<Int(context.pointee.nb_streams)).compactMap { context.pointee.streams[$0] }
        guard let video = streams.first(where: isVideo) else {
            if streams.contains(where: { $0.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO }) {
                throw InvalidMedia("an audio file (no video stream) is not a photo or video", .notMedia)
            }
            throw InvalidMedia("\(format.name) without a video stream is not a photo or video", .notMedia)
        }
        return try body(context, streams, video)
    }

    /// How the stream's display matrix turns its pictures.
    private static func orientation(of video: UnsafeMutablePointer<AVStream>) -> ImageOrientation {
        ImageOrientation(clockwiseRotation: -counterClockwiseRotation(of: video))
    }

    private static func isVideo(_ stream: UnsafeMutablePointer<AVStream>) -> Bool {
        stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO && stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0
    }

    /// Refuses a file whose samples, as the demuxer's index lists them, lie past its end.
    private static func checkIndex(
        _ streams: [UnsafeMutablePointer<AVStream>], context: UnsafeMutablePointer<AVFormatContext>, format: MediaFormat
    ) throws {
        guard let io = context.pointee.pb else { return }
        let size = avio_size(io)
        guard size > 0 else { return }
        for stream in streams {
            let count = avformat_index_get_entries_count(stream)
            guard count > 0, let last = avformat_index_get_entry(stream, count - 1) else { continue }
            let end = last.pointee.pos + Int64(last.pointee.size)
            if end > size {
                throw InvalidMedia(
                    "truncated \(format.name): the file ends at byte \(size) but its samples reach byte \(end); copy the file again from its source"
                )
            }
        }
    }

    /// Decodes packets of `stream` until one frame comes out, and returns what `body` makes of it.
    private static func decodeFirstFrame<T>(
        of stream: UnsafeMutablePointer<AVStream>, in context: UnsafeMutablePointer<AVFormatContext>, format: MediaFormat,
        _ body: (UnsafeMutablePointer<AVFrame>) throws -> T
    ) throws -> T {
        let parameters = stream.pointee.codecpar!
        guard let codec = avcodec_find_decoder(parameters.pointee.codec_id) else {
            let name = String(cString: avcodec_get_name(parameters.pointee.codec_id))
            throw InvalidMedia("\(format.name) with video coded as \(name), which FFmpeg here cannot decode, is not supported", .notMedia)
        }
        var decoder = avcodec_alloc_context3(codec)
        defer { avcodec_free_context(&decoder) }
        guard let decoder else { throw InvalidMedia("could not allocate a decoder") }
        decoder.pointee.thread_count = 1
        var status = avcodec_parameters_to_context(decoder, parameters)
        if status >= 0 { status = avcodec_open2(decoder, codec, nil) }
        guard status >= 0 else { throw InvalidMedia(describe(status, "damaged \(format.name): its video decoder cannot start")) }
        var packet = av_packet_alloc()
        var frame = av_frame_alloc()
        defer {
            av_packet_free(&packet)
            av_frame_free(&frame)
        }
        guard let packet, let frame else { throw InvalidMedia("could not allocate a frame") }
        var lastError: Int32 = 0
        for _ in 0..<maximumPacketsBeforeFirstFrame {
            let read = av_read_frame(context, packet)
            if read < 0 {
                if read != photoledger_averror_eof() { lastError = read }
                break
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == stream.pointee.index else { continue }
            let sent = avcodec_send_packet(decoder, packet)
            if sent < 0 && sent != photoledger_averror_again() { lastError = sent }
            let received = avcodec_receive_frame(decoder, frame)
            if received == 0 { return try body(frame) }
            if received != photoledger_averror_again() && received != photoledger_averror_eof() { lastError = received }
        }
        avcodec_send_packet(decoder, nil)  // drain: a decoder with delay holds the first frame back
        if avcodec_receive_frame(decoder, frame) == 0 { return try body(frame) }
        throw InvalidMedia(
            describe(lastError, "damaged \(format.name): no frame of its video decodes (its media data is missing, empty or corrupt)"))
    }

    /// The rotation of the stream's display matrix, in degrees counter-clockwise (FFmpeg's sign).
    private static func counterClockwiseRotation(of stream: UnsafeMutablePointer<AVStream>) -> Double {
        var size: Int = 0
        guard let data = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 36 else { return 0 }
        let degrees = data.withMemoryRebound(to: Int32.self, capacity: 9) { av_display_rotation_get($0) }
        return degrees.isFinite ? degrees : 0
    }

    /// The container's duration, else the stream's; 0 when neither is known or it is beyond
    /// `MediaInfo.longestDuration`.
    private static func duration(_ context: UnsafeMutablePointer<AVFormatContext>, _ stream: UnsafeMutablePointer<AVStream>) -> Double {
        let base = stream.pointee.time_base
        let seconds =
            context.pointee.duration > 0
            ? Double(context.pointee.duration) / Double(AV_TIME_BASE)
            : stream.pointee.duration > 0 && base.den > 0 ? Double(stream.pointee.duration) * Double(base.num) / Double(base.den) : 0
        return seconds.isFinite && (0...MediaInfo.longestDuration).contains(seconds) ? seconds : 0
    }

    private static func value(_ dictionary: OpaquePointer?, _ key: String) -> String? {
        guard let dictionary, let entry = av_dict_get(dictionary, key, nil, 0), let value = entry.pointee.value else { return nil }
        return String(cString: value)
    }

    /// Apple's capture date (with its offset) when the movie has one, else the container's
    /// creation time (FFmpeg reads MP4 times written from 1970 instead of 1904 as such). Times
    /// before 1971 are the "not set" values of writers and are ignored.
    private static func creationDate(_ container: OpaquePointer?, _ stream: OpaquePointer?) -> Date? {
        let candidates = [
            value(container, "com.apple.quicktime.creationdate"), value(container, "creation_time"), value(stream, "creation_time"),
        ]
        for text in candidates.compactMap({ $0 }) {
            if let date = Exif.date(text: text, offset: nil), date.timeIntervalSince1970 >= 365 * 86_400 { return date }
        }
        return nil
    }

    /// The ISO 6709 location of a movie: QuickTime's `©xyz` or Apple's
    /// `com.apple.quicktime.location.ISO6709`, which FFmpeg both reads.
    private static func location(_ metadata: OpaquePointer?) -> Location? {
        for key in ["com.apple.quicktime.location.ISO6709", "location"] {
            if let text = value(metadata, key), let location = ISO6709.location(text) { return location }
        }
        return nil
    }

    /// `fallback`, with FFmpeg's words for `code` when there is one.
    private static func describe(_ code: Int32, _ fallback: String) -> String {
        guard code < 0 else { return fallback }
        var buffer = [CChar](repeating: 0, count: 256)
        guard av_strerror(code, &buffer, buffer.count) == 0 else { return fallback }
        let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return "\(fallback) (FFmpeg: \(text))"
    }
}

/// Locations written as ISO 6709 text: `+48.8583+002.2945+035.000/` (degrees, optional altitude,
/// optional coordinate reference, a closing slash).
enum ISO6709 {
    static func location(_ text: String) -> Location? {
        var numbers: [Double] = []
        var current = ""
        for character in text {
            if character == "+" || character == "-" {
                if !current.isEmpty { numbers.append(contentsOf: Double(current).map { [$0] } ?? []) }
                current = String(character)
            } else if character.isNumber || character == "." {
                guard !current.isEmpty else { return nil }
                current.append(character)
            } else {
                break  // "CRS…" or "/"
            }
        }
        if !current.isEmpty, let last = Double(current) { numbers.append(last) }
        // A number of hundreds of digits reads as infinity.
        guard numbers.count >= 2, numbers.allSatisfy(\.isFinite), abs(numbers[0]) <= 90, abs(numbers[1]) <= 180,
            numbers[0] != 0 || numbers[1] != 0
        else { return nil }
        return Location(latitude: numbers[0], longitude: numbers[1], altitude: numbers.count >= 3 ? numbers[2] : nil)
    }
}
