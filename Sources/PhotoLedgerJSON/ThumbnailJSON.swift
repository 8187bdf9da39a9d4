import Foundation
import PhotoLedger

/// The JSON shape of an image the image manager wrote to a file (`photoledger thumbnail --json`).
package enum ThumbnailJSON {
    /// The `thumbnail --json` shape: the asset, the file written and the image's size and type.
    package static func json(asset: String, file: String, image: ImageResult) -> JSON {
        .object([
            ("localIdentifier", .string(asset)), ("file", .string(file)), ("pixelWidth", .int(Int64(image.pixelWidth))),
            ("pixelHeight", .int(Int64(image.pixelHeight))), ("uniformTypeIdentifier", .string(image.uniformTypeIdentifier)),
            ("bytes", .int(Int64(image.data.count))),
        ])
    }
}
