/// Real, small media files generated from a seed, for demos, tests and benchmarks: the same
/// arguments give the same bytes on every machine.
public enum SyntheticMedia {
    /// A file of `format` showing `RGBImage.scene` for `seed` (JPEG, PNG, GIF; WebP in the
    /// scene's average colour), or a 3-second movie (MP4, QuickTime), or a HEIC container.
    /// GIFs get three frames, so they are animated.
    public static func sample(_ format: MediaFormat, width: Int, height: Int, seed: UInt64) -> [UInt8] {
        switch format {
        case .jpeg:
            return JPEGEncoder().encode(RGBImage.scene(width: width, height: height, seed: seed))
        case .png:
            return PNGEncoder.encode(RGBImage.scene(width: width, height: height, seed: seed))
        case .gif:
            return GIFEncoder.encode((0..<3).map { RGBImage.scene(width: width, height: height, seed: seed, phase: Double($0) / 3) })
        case .webp:
            return WebPEncoder.encode(
                width: width, height: height, colors: [averageColor(RGBImage.scene(width: 16, height: 16, seed: seed))])
        case .heic:
            return ISOBaseMediaWriter.heic(width: width, height: height, seed: seed)
        case .mp4, .quickTime:
            return ISOBaseMediaWriter.movie(width: width, height: height, duration: 3, quickTime: format == .quickTime, seed: seed)
        }
    }

    /// The mean red, green and blue of an image.
    public static func averageColor(_ image: RGBImage) -> (red: UInt8, green: UInt8, blue: UInt8) {
        var sums = [0, 0, 0]
        for (index, value) in image.pixels.enumerated() { sums[index % 3] += Int(value) }
        let count = image.width * image.height
        return (UInt8(sums[0] / count), UInt8(sums[1] / count), UInt8(sums[2] / count))
    }
}
