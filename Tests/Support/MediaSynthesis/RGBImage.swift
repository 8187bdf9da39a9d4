import CMediaEncoding
import Foundation
import LedgerCore

/// An 8-bit RGB raster, row by row, the input of the encoders that make test and demo media.
public struct RGBImage: Sendable, Equatable {
    /// Width in pixels (at least 1).
    public let width: Int
    /// Height in pixels (at least 1).
    public let height: Int
    /// `width × height × 3` bytes: red, green, blue for each pixel, rows from the top.
    public var pixels: [UInt8]

    /// An image of `width × height` pixels of one colour.
    public init(width: Int, height: Int, red: UInt8 = 0, green: UInt8 = 0, blue: UInt8 = 0) {
        precondition(width > 0 && height > 0, "an image needs at least one pixel")
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height * 3)
        for index in stride(from: 0, to: pixels.count, by: 3) {
            pixels[index] = red
            pixels[index + 1] = green
            pixels[index + 2] = blue
        }
    }

    /// The red, green and blue values at column `x`, row `y`.
    public subscript(x: Int, y: Int) -> (red: UInt8, green: UInt8, blue: UInt8) {
        get {
            let index = (y * width + x) * 3
            return (pixels[index], pixels[index + 1], pixels[index + 2])
        }
        set {
            let index = (y * width + x) * 3
            pixels[index] = newValue.red
            pixels[index + 1] = newValue.green
            pixels[index + 2] = newValue.blue
        }
    }

    /// A picture that looks like something: a sky-to-ground gradient in colours chosen by `seed`,
    /// a sun, and a few soft hills. The same seed gives the same pixels on every machine;
    /// `phase` (0…1) moves the sun, for animation frames.
    public static func scene(width: Int, height: Int, seed: UInt64, phase: Double = 0) -> RGBImage {
        var random = SeededRandomNumberGenerator(seed: seed)
        func channel() -> Double { Double(UInt8.random(in: 40...255, using: &random)) }
        let top = (channel(), channel(), channel())
        let bottom = (channel() * 0.6, channel() * 0.6, channel() * 0.6)
        let sun = (x: Double.random(in: 0.2...0.8, using: &random) + phase * 0.3, y: Double.random(in: 0.15...0.4, using: &random))
        let sunRadius = Double.random(in: 0.06...0.12, using: &random)
        let hills = (0..<3).map { _ in
            (
                height: Double.random(in: 0.55...0.8, using: &random), frequency: Double.random(in: 2...7, using: &random),
                shift: Double.random(in: 0...6.28, using: &random), shade: Double.random(in: 0.25...0.6, using: &random)
            )
        }
        var image = RGBImage(width: width, height: height)
        let scale = Double(max(width, height))
        for y in 0..<height {
            let v = Double(y) / Double(max(height - 1, 1))
            for x in 0..<width {
                let u = Double(x) / Double(max(width - 1, 1))
                var color = (
                    top.0 + (bottom.0 - top.0) * v, top.1 + (bottom.1 - top.1) * v, top.2 + (bottom.2 - top.2) * v
                )
                let dx = (u - sun.x) * Double(width) / scale, dy = (v - sun.y) * Double(height) / scale
                let distance = (dx * dx + dy * dy).squareRoot()
                let glow = max(0, 1 - distance / sunRadius)
                color = (color.0 + (255 - color.0) * glow, color.1 + (235 - color.1) * glow, color.2 + (150 - color.2) * glow * 0.5)
                for hill in hills where v > hill.height + 0.08 * sin(u * hill.frequency + hill.shift) {
                    color = (color.0 * hill.shade, color.1 * (hill.shade + 0.25), color.2 * hill.shade)
                }
                image[x, y] = (UInt8(clamping: Int(color.0)), UInt8(clamping: Int(color.1)), UInt8(clamping: Int(color.2)))
            }
        }
        return image
    }

    /// The pixels of an encoded image (its first frame) as stored, decoded by libvips: not
    /// turned by its orientation, transparency flattened onto black.
    public static func decode(_ bytes: some Collection<UInt8>) throws -> RGBImage {
        let encoded = Array(bytes)
        var pixels: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0, height: Int32 = 0
        var error = [CChar](repeating: 0, count: 512)
        let status = encoded.withUnsafeBufferPointer {
            photoledger_decode($0.baseAddress, $0.count, &pixels, &width, &height, &error, error.count)
        }
        guard status == 0, let pixels else {
            throw MediaSynthesisError(
                "libvips could not decode the image: \(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))"
            )
        }
        defer { photoledger_encoded_free(pixels) }
        var image = RGBImage(width: Int(width), height: Int(height))
        image.pixels = Array(UnsafeBufferPointer(start: pixels, count: Int(width) * Int(height) * 3))
        return image
    }
}
